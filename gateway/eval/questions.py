"""Question sets: JSONL files of questions with gold SQL.

One JSON object per line::

    {"id": "demo-m02", "question": "What was the total revenue in 2024?", "database": "demo",
     "gold_sql": "SELECT sum(total_amount) FROM orders WHERE ...",
     "evidence": "Revenue is the sum of ...", "category": "medium"}

``gold_sql`` may be a list of alternatives (a prediction is right when it matches any of them: "which month"
answered as a number, a date or a ``YYYY-MM`` string). ``evidence`` (domain knowledge handed to the model,
as in BIRD) and ``category`` (difficulty or topic, for the per-category report) are optional. Blank lines
are skipped. ``shipped("demo")`` is the set written for the demo database.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["Question", "QuestionSetError", "load_questions", "question_set_digest", "shipped"]

_KNOWN_KEYS = frozenset({"id", "question", "database", "gold_sql", "evidence", "category"})


class QuestionSetError(ValueError):
    """A question file that cannot be used; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    question: str
    database: str
    gold_sql: tuple[str, ...]
    evidence: str | None = None
    category: str | None = None

    def as_dict(self) -> dict[str, Any]:
        gold: str | list[str] = self.gold_sql[0] if len(self.gold_sql) == 1 else list(self.gold_sql)
        data: dict[str, Any] = {"id": self.id, "question": self.question, "database": self.database,
                                "gold_sql": gold}
        if self.evidence:
            data["evidence"] = self.evidence
        if self.category:
            data["category"] = self.category
        return data


def shipped(name: str = "demo") -> Path:
    """Path of a question set that ships with the package (``gateway/eval/questions/<name>.jsonl``)."""
    path = Path(str(resources.files("gateway.eval") / "questions" / f"{name}.jsonl"))
    if not path.is_file():
        raise QuestionSetError(f"no shipped question set named {name!r}")
    return path


def load_questions(path: Path) -> list[Question]:
    """Read and validate a question file; ids must be unique."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionSetError(f"cannot read {path}: {exc}") from exc
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise QuestionSetError(f"{where}: not JSON: {exc}") from exc
        question = _parse(data, where)
        if question.id in seen:
            raise QuestionSetError(f"{where}: id {question.id!r} already used on line {seen[question.id]}")
        seen[question.id] = number
        questions.append(question)
    if not questions:
        raise QuestionSetError(f"{path}: no questions")
    return questions


def _parse(data: Any, where: str) -> Question:
    if not isinstance(data, dict):
        raise QuestionSetError(f"{where}: expected a JSON object")
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        raise QuestionSetError(f"{where}: unknown keys {unknown}; allowed: {sorted(_KNOWN_KEYS)}")
    for key in ("id", "question", "database"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise QuestionSetError(f"{where}: {key!r} must be a non-empty string")
    gold = data.get("gold_sql")
    alternatives = [gold] if isinstance(gold, str) else gold
    if (not isinstance(alternatives, list) or not alternatives
            or not all(isinstance(g, str) and g.strip() for g in alternatives)):
        raise QuestionSetError(f"{where}: 'gold_sql' must be a SQL string or a non-empty list of them")
    for key in ("evidence", "category"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise QuestionSetError(f"{where}: {key!r} must be a string")
    return Question(
        id=data["id"], question=data["question"], database=data["database"],
        gold_sql=tuple(alternatives), evidence=data.get("evidence") or None, category=data.get("category") or None,
    )


def question_set_digest(questions: list[Question]) -> str:
    """Identifies a question set's content, so that a resumed run can refuse a different set."""
    digest = hashlib.sha256()
    for q in questions:
        digest.update(json.dumps(q.as_dict(), sort_keys=True).encode())
    return digest.hexdigest()[:16]
