"""Execute: run one checked attempt on its database, guarded (see :mod:`gateway.execute`).

A database error becomes an ``exec_error`` finding for the next reflection; what no reflection can fix
raises instead and the question ends with that problem, never with a ``failed`` answer: an unavailable
database, the request's deadline spent, no connection or result memory free in time. Postgres hints name
similar columns ("Perhaps you meant customers.ssn"): hidden names are masked for the LLM and the client
alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway import errors
from gateway.execute import QueryResult, Target, run_query
from gateway.findings import Finding
from gateway.pipeline.validate import exec_error
from gateway.sql.masking import mask

# Failures of the gateway's or the database's, not of the SQL: the question ends with their problem.
INFRASTRUCTURE: tuple[type[errors.GatewayError], ...] = (
    errors.DatabaseUnavailable, errors.RowPolicyClaimInvalid, errors.DeadlineExceeded, errors.Overloaded)


async def execute(target: Target, sql: str, *, max_rows: int | None, role: str | None,
                  hidden: Sequence[str], claims: Sequence[tuple[str, str]] = (),
                  args: Sequence[str] = ()) -> Finding | QueryResult:
    """The result, or the ``exec_error`` finding of a statement the database refused.

    ``claims``: the asker's row-policy values (``nl2sql.<name>`` for RLS); ``args``: the row filters'
    parameters of a rewritten ``sql`` (gateway.sql.row_policy)."""
    try:
        return await run_query(target, sql, max_rows=max_rows, role=role, claims=claims, args=args)
    except INFRASTRUCTURE:
        raise
    except errors.GatewayError as exc:
        extra = {**exc.extra, **{k: mask(str(exc.extra[k]), hidden) for k in ("message", "hint") if exc.extra.get(k)}}
        return exec_error(exc.code, mask(exc.detail, hidden), extra)
