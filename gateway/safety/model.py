"""What the safety check decides: findings with stable codes (:class:`gateway.findings.Finding`, the one
finding type of the gateway), gathered into a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.findings import Finding

__all__ = ["Finding", "Verdict"]


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
        if not self.findings:  # the usual answer, without building the empty lists from the findings
            return {"allowed": True, "statement_kind": self.statement_kind, "codes": [], "findings": []}
        return {
            "allowed": self.allowed,
            "statement_kind": self.statement_kind,
            "codes": self.codes,
            "findings": [f.as_dict() for f in self.findings],
        }
