"""What the safety check decides: findings with stable codes, gathered into a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason to refuse a statement.

    ``code`` is stable and machine-readable (``write_statement``, ``function_not_allowed`` ...);
    ``message`` names the offending clause or function; ``clause`` is the SQL fragment or name at fault;
    ``position`` is a 0-based character offset into the checked text when the parser knows it.
    """

    code: str
    message: str
    clause: str | None = None
    position: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "clause": self.clause, "position": self.position}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of :func:`gateway.safety.check`: ``allowed`` is true only when there are no findings."""

    sql: str
    findings: tuple[Finding, ...] = ()
    statement_kind: str | None = None
    tables: frozenset[str] = field(default_factory=frozenset)

    @property
    def allowed(self) -> bool:
        return not self.findings

    @property
    def codes(self) -> list[str]:
        """Distinct finding codes, in the order they were found."""
        return list(dict.fromkeys(f.code for f in self.findings))

    def as_dict(self) -> dict[str, object]:
        return {
            "allowed": self.allowed,
            "statement_kind": self.statement_kind,
            "codes": self.codes,
            "findings": [f.as_dict() for f in self.findings],
        }
