"""What generation and reflection see about a question: the pruned schema, rules, guideline, examples."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Guideline:
    """A self-correction guideline (MAGIC format); ``version`` is recorded with every answer."""

    version: str
    text: str


@dataclass(frozen=True, slots=True)
class Example:
    """A verified question and its SQL, shown to the LLM as a worked example."""

    question: str
    sql: str


@dataclass(frozen=True, slots=True)
class ValueHint:
    """A phrase of the question that names a value stored in ``table.column`` (spelled as ``value``)."""

    phrase: str
    table: str
    column: str
    value: str
    score: float

    def as_text(self) -> str:
        quoted = self.value.replace("'", "''")
        return f"'{self.phrase}' likely means {self.table}.{self.column} = '{quoted}'"


@dataclass(slots=True)
class Context:
    """Everything the prompts need for one question on one database. Never names a hidden object."""

    database: str
    question: str
    evidence: str | None
    schema_text: str
    rules_text: str
    guideline: Guideline
    examples: list[Example] = field(default_factory=list)
    value_hints: list[ValueHint] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    token_estimate: int = 0

    @property
    def value_hints_text(self) -> str:
        return "\n".join(f"- {h.as_text()}" for h in self.value_hints)


def estimate_tokens(text: str) -> int:
    """A cheap, model-independent estimate: about four characters per token for English and SQL."""
    return (len(text) + 3) // 4
