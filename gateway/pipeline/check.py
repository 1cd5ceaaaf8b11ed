"""Check: the static safety check on one attempt's SQL, before anything of it runs.

SQL that fails is never executed; it becomes a ``blocked`` finding that the next reflection reads, with
hidden table and column names masked so that a refusal does not teach the model what is hidden.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gateway import errors, safety
from gateway.findings import Finding
from gateway.pipeline.validate import blocked
from gateway.sql.masking import mask

VerdictOf = Callable[[str], safety.Verdict]  # the database's policy applied (and counted) to one SQL text


def check(verdict_of: VerdictOf, sql: str, hidden: Sequence[str]) -> Finding | None:
    """None when ``sql`` may run; otherwise the ``blocked`` finding that says why."""
    try:
        verdict = verdict_of(sql)
    except errors.SqlTooLarge as exc:
        return blocked([exc.code], [exc.detail])
    if verdict.allowed:
        return None
    return blocked(verdict.codes, [mask(f.message, hidden) for f in verdict.findings])
