"""The client-SQL path behind ``POST /v1/sql`` and ``POST /v1/check``: check, then execute guarded."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import structlog

from gateway import errors, safety
from gateway.execute import QueryResult, run_query
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.settings import Limits
from gateway.state import GatewayState

log = get_logger(__name__)


@dataclass(slots=True)
class SqlOutcome:
    verdict: safety.Verdict
    result: QueryResult
    timings: dict[str, float]


def query_hash(sql: str) -> str:
    """A short stable id for a SQL text, for logs (the text itself may hold customer literals)."""
    return hashlib.sha256(sql.encode()).hexdigest()[:16]


def check_sql(state: GatewayState, sql: str, database: str | None) -> safety.Verdict:
    """Run the static safety check with the database's policy; count blocks by code."""
    _enforce_size(state, sql, database)
    verdict = safety.check(sql, state.policy(database))
    for code in verdict.codes:
        metrics.SAFETY_BLOCKS.labels(code).inc()
    return verdict


async def run_client_sql(state: GatewayState, database: str, sql: str, max_rows: int | None, *,
                         role: str | None = None) -> SqlOutcome:
    """Check ``sql`` and, if allowed, run it on ``database``; raises a GatewayError otherwise.

    ``role``: the Postgres role the caller's API key maps to, assumed for this query (``SET LOCAL ROLE``).
    """
    started = time.perf_counter()
    target = state.target(database)
    verdict = check_sql(state, sql, database)
    checked = time.perf_counter()
    qhash = query_hash(sql)
    if not verdict.allowed:
        structlog.contextvars.bind_contextvars(database=database, query_hash=qhash, verdict="blocked",
                                              codes=verdict.codes)
        raise errors.SqlBlocked(
            "; ".join(f.message for f in verdict.findings),
            findings=[f.as_dict() for f in verdict.findings],
            codes=verdict.codes,
        )
    try:
        result = await run_query(target, sql, max_rows=state.max_rows(database, max_rows), role=role)
    except errors.GatewayError as exc:
        structlog.contextvars.bind_contextvars(database=database, query_hash=qhash, verdict="allowed",
                                              error=exc.code, sqlstate=exc.extra.get("sqlstate"))
        raise
    total = time.perf_counter() - started
    timings = {"check_ms": (checked - started) * 1000, **result.timings, "total_ms": total * 1000}
    # Bound, not logged: the middleware's one "request" line per request carries these fields.
    structlog.contextvars.bind_contextvars(database=database, query_hash=qhash, verdict="allowed",
                                          rows=result.row_count, truncated=result.truncated)
    return SqlOutcome(verdict, result, timings)


def _enforce_size(state: GatewayState, sql: str, database: str | None) -> None:
    limits = state.target(database).settings.limits if database else Limits()
    size = len(sql.encode("utf-8"))
    if size > limits.max_sql_bytes:
        setting = f"databases.{database}.limits.max_sql_bytes" if database else "the default max_sql_bytes"
        raise errors.SqlTooLarge(
            f"SQL is {size} bytes; {setting} allows {limits.max_sql_bytes}",
            size=size, limit=limits.max_sql_bytes,
        )
