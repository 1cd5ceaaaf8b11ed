"""Respond: the answer to a question, the attempts trace, and their server-sent-event form.

Status of an answer:
- ``ok``: the chosen attempt ran and validation found nothing but advisory findings (guesses from the
  question's wording, :data:`gateway.findings.ADVISORY`), or a reflection upheld it: shown its findings, the
  model re-stated the same SQL or wrote SQL with the same result (``upheld`` in the trace; the findings stay);
- ``suspicious``: it ran, but findings remain (ones the policy does not reflect on, or ones reflection did
  not clear before the loop stopped);
- ``failed``: no attempt ran successfully (database errors, or no SQL in the LLM's answers);
- ``blocked``: every attempt that produced SQL was refused by the safety check;
- ``needs_clarification``: the model asked the user a clarifying question instead of guessing (no SQL ran;
  ``clarification`` holds the question and options, see :mod:`gateway.pipeline.clarify`).

Every answer given in a conversation carries its ``conversation_id`` (:mod:`gateway.pipeline.conversation`).

When the LLM's answers never contained any SQL at all, ``POST /v1/ask`` answers the problem
``llm_bad_output`` (502) instead of a ``failed`` answer: nothing was tried, so there is no trace worth
returning as a result (the problem carries the attempts anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.corrections import Correction
from gateway.execute import QueryResult, values
from gateway.findings import ADVISORY, Finding, family_of
from gateway.pipeline.clarify import Clarification
from gateway.pipeline.generate import normalize_sql
from gateway.pipeline.question import Question

Source = Literal["generation", "candidate", "reflection", "verified_example", "template", "semantic_model"]
Status = Literal["ok", "suspicious", "failed", "blocked", "needs_clarification"]


@dataclass(slots=True)
class Attempt:
    n: int
    source: Source
    sql: str | None
    findings: list[Finding] = field(default_factory=list)
    triggers: list[str] = field(default_factory=list)  # finding codes that call for a reflection
    timings: dict[str, float] = field(default_factory=dict)  # llm_ms, check_ms, db_ms, total_ms
    tokens: dict[str, int] = field(default_factory=lambda: {"prompt": 0, "completion": 0})
    guideline_applied: bool = False
    result: QueryResult | None = None  # kept for the answer; not part of the trace
    candidate: dict[str, Any] | None = None  # with ask.candidates > 1: the variant and temperature it was drawn with
    # A reflection shown this attempt's findings re-stated its SQL or its result: the doubt is recorded (the
    # findings stay), the answer stands.
    upheld: bool = False
    # source semantic_model: the metric query the LLM picked; the SQL was compiled from the model's definitions
    metric_query: dict[str, Any] | None = None

    @property
    def ran(self) -> bool:
        return self.result is not None

    @property
    def passed(self) -> bool:
        return self.ran and not self.triggers

    @property
    def codes(self) -> list[str]:
        return list(dict.fromkeys(f.code for f in self.findings))

    @property
    def upholdable(self) -> bool:
        """It ran, and what reflection was asked about is only how the result looks (the validation family):
        a rule broken or a failure is never upheld by the model's insistence."""
        return self.ran and all(family_of(code) == "validation" for code in self.triggers)

    def rank(self) -> int:
        """Which attempt makes the best answer: passed (or upheld) > ran with findings > failed > blocked > no
        SQL."""
        if self.passed or self.upheld:
            return 4
        if self.ran:
            return 3
        if "exec_error" in self.codes:
            return 2
        return 1 if "blocked" in self.codes else 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n": self.n,
            "source": self.source,
            "sql": self.sql,
            "passed": self.passed,
            "findings": [f.as_dict() for f in self.findings],
            "row_count": self.result.row_count if self.result else None,
            "guideline_applied": self.guideline_applied,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "tokens": dict(self.tokens),
        }
        if self.candidate is not None:  # only with candidates: a single generation's trace stays as it was
            out["candidate"] = dict(self.candidate)
        if self.upheld:
            out["upheld"] = True
        if self.metric_query is not None:
            out["metric_query"] = dict(self.metric_query)
        return out


@dataclass(slots=True)
class Answer:
    status: Status
    database: str
    question: str
    chosen: Attempt | None
    attempts: list[Attempt]
    stop_reason: str
    guideline_version: str | None
    guideline_applied: bool
    request_id: str | None = None
    candidates: dict[str, Any] | None = None  # with ask.candidates > 1: the groups and how one was chosen
    clarification: Clarification | None = None  # with status needs_clarification
    conversation_id: str | None = None  # set when the answer is a turn of a conversation
    # A DBA's template answered (gateway.pipeline.trusted): its name, the parameter values, where to re-run it
    trusted: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        result = self.chosen.result if self.chosen else None
        out: dict[str, Any] = {
            "status": self.status,
            "database": self.database,
            "sql": self.chosen.sql if self.chosen else None,
            "columns": [{"name": c.name, "type": c.type} for c in result.columns] if result else [],
            "rows": result.rows if result else [],
            "row_count": result.row_count if result else 0,
            "truncated": result.truncated if result else False,
            "findings": [f.as_dict() for f in self.chosen.findings] if self.chosen else [],
            "attempts": [a.as_dict() for a in self.attempts],
            "stop_reason": self.stop_reason,
            "guideline_version": self.guideline_version,
            "guideline_applied": self.guideline_applied,
            "request_id": self.request_id,
            "conversation_id": self.conversation_id,
            "clarification": self.clarification.as_dict() if self.clarification else None,
        }
        if self.candidates is not None:
            out["candidates"] = self.candidates
        if self.trusted is not None:
            out["trusted"] = self.trusted
        if self.chosen is not None and self.chosen.source == "semantic_model":
            out["compiled_from"] = "semantic_model"  # the SQL was written from the model's definitions
        return out


def choose(attempts: list[Attempt]) -> Attempt | None:
    """The best attempt; among equals the earliest: a reflection is only asked for because of a doubt, and
    an attempt that does no better than the one doubted must not replace it (a false alarm would otherwise
    turn a right answer into a different, possibly wrong one)."""
    best: Attempt | None = None
    for attempt in attempts:
        if attempt.sql is not None and (best is None or attempt.rank() > best.rank()):
            best = attempt
    return best


def status_of(chosen: Attempt | None) -> Status:
    if chosen is None or chosen.rank() == 2 or chosen.rank() == 0:
        return "failed"
    if chosen.rank() == 1:
        return "blocked"
    if chosen.upheld:
        return "ok"
    return "ok" if chosen.passed and all(f.code in ADVISORY for f in chosen.findings) else "suspicious"


def to_json(data: Any) -> bytes:
    """UTF-8 JSON of an answer, total over every value a query returns (see gateway.execute.values.dumps)."""
    return values.dumps(data)


def sse(event: str, data: Any) -> bytes:
    """One server-sent event; JSON has no raw newlines, so one ``data:`` line suffices."""
    return b"event: " + event.encode() + b"\ndata: " + to_json(data) + b"\n\n"


def corrections_of(answer: Answer, q: Question) -> list[Correction]:
    """One correction per distinct earlier SQL that did not pass, when a later attempt did.

    Candidates are drawn side by side, so every failed candidate counts as earlier than the chosen answer.
    """
    chosen = answer.chosen
    if chosen is None or not chosen.passed or chosen.sql is None:
        return []
    out: list[Correction] = []
    done: set[str] = set()
    for attempt in answer.attempts:
        if attempt is chosen:
            continue
        if attempt.n >= chosen.n and attempt.source != "candidate":
            break
        if attempt.sql is None or attempt.passed or normalize_sql(attempt.sql) in done:
            continue
        done.add(normalize_sql(attempt.sql))
        out.append(Correction(question=q.question, evidence=q.evidence, database=q.database,
                              incorrect_sql=attempt.sql, corrected_sql=chosen.sql,
                              findings=[f.as_dict() for f in attempt.findings], request_id=q.request_id,
                              owner=q.client, end_user=q.end_user, via=q.via))
    return out


def clarifying_answer(q: Question, attempt: Attempt, clarification: Clarification,
                      guideline_version: str | None) -> Answer:
    """The answer when the model asked the user a question instead of writing SQL: nothing ran."""
    return Answer(status="needs_clarification", database=q.database, question=q.question, chosen=None,
                  attempts=[attempt], stop_reason="clarification", guideline_version=guideline_version,
                  guideline_applied=False, request_id=q.request_id, clarification=clarification)
