"""The client-SQL path behind ``POST /v1/sql`` and ``POST /v1/check``: check, then execute guarded."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from gateway import errors, safety
from gateway.execute import QueryResult, Target, run_query
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.rules import RuleSet
from gateway.settings import Limits
from gateway.sql import row_policy
from gateway.sql.masking import hidden_names_of, mask, mask_fields

log = get_logger(__name__)


class Databases(Protocol):
    """What the client-SQL path needs of the configured databases (the gateway's resources are one): the
    target, the safety policy in force (settings plus rules), the rules (row filters), the row cap in force
    and the relations the row filters were last loaded against."""

    @property
    def relation_cache(self) -> row_policy.RelationCache: ...

    def ruleset(self, name: str) -> RuleSet: ...

    def target(self, name: str) -> Target: ...

    def policy(self, name: str | None) -> safety.Policy: ...

    def max_rows(self, name: str, requested: int | None) -> int | None: ...


@dataclass(slots=True)
class SqlOutcome:
    verdict: safety.Verdict
    result: QueryResult
    timings: dict[str, float]


def query_hash(sql: str) -> str:
    """A short stable id for a SQL text, for logs (the text itself may hold customer literals)."""
    return hashlib.sha256(sql.encode()).hexdigest()[:16]


class _Verdicts:
    """Recent verdicts, per policy object: ``safety.check`` is a pure function of (SQL, policy), and
    dashboards send the same statements over and over. A new policy (rules reloaded, other database)
    is a different object, so its verdicts are never confused with another's."""

    MAX_ENTRIES = 4096
    MAX_SQL_CHARS = 16_384  # long one-off statements are not worth the memory

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[int, str], tuple[safety.Policy, safety.Verdict]] = OrderedDict()

    def check(self, sql: str, policy: safety.Policy) -> safety.Verdict:
        if len(sql) > self.MAX_SQL_CHARS:
            return safety.check(sql, policy)
        key = (id(policy), sql)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is policy:  # the policy is held by the entry: its id is not reused
            self._entries.move_to_end(key)
            return hit[1]
        verdict = safety.check(sql, policy)
        self._entries[key] = (policy, verdict)
        if len(self._entries) > self.MAX_ENTRIES:
            self._entries.popitem(last=False)
        return verdict


_verdicts = _Verdicts()


def check_sql(databases: Databases, sql: str, database: str | None) -> safety.Verdict:
    """Run the static safety check with the database's policy; count blocks by code."""
    _enforce_size(databases, sql, database)
    verdict = _verdicts.check(sql, databases.policy(database))
    if verdict.findings:
        for code in verdict.codes:
            metrics.SAFETY_BLOCKS.labels(code).inc()
    return verdict


async def run_client_sql(databases: Databases, database: str, sql: str, max_rows: int | None, *,
                         role: str | None = None, principal: str | None = None,
                         claims: Sequence[tuple[str, str]] = ()) -> SqlOutcome:
    """Check ``sql`` and, if allowed, run it on ``database``; raises a GatewayError otherwise.

    ``role``: the Postgres role the caller's API key maps to, assumed for this query (``SET LOCAL ROLE``).
    ``principal``: the caller's :attr:`~gateway.auth.keys.Principal.partition`; the statement stays prepared
    on the connection for that principal only (gateway.execute.statements).
    ``claims``: the caller's row-policy values: set as ``nl2sql.<name>`` for the database's RLS policies, and
    bound into the rules' row filters (gateway.sql.row_policy), whose rewritten text is what runs.
    """
    started = time.perf_counter()
    target = databases.target(database)
    verdict = check_sql(databases, sql, database)
    qhash = query_hash(sql)
    if verdict.allowed:
        run = await row_policy.filtered(databases, database, sql, claims, verdict)
        verdict = run.verdict
    checked = time.perf_counter()
    if not verdict.allowed:
        structlog.contextvars.bind_contextvars(database=database, query_hash=qhash, verdict="blocked",
                                              codes=verdict.codes)
        raise blocked(databases, database, verdict)
    try:
        result = await run_query(target, run.sql, max_rows=databases.max_rows(database, max_rows), role=role,
                                 principal=principal, claims=claims, args=run.args)
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


def blocked(databases: Databases, database: str, verdict: safety.Verdict) -> errors.SqlBlocked:
    """The ``sql_blocked`` problem for a refused verdict, hidden names masked."""
    for code in verdict.codes:
        if code == "row_filter_unenforceable":
            metrics.SAFETY_BLOCKS.labels(code).inc()  # check_sql counted the others
    names = hidden_names(databases, database)  # a finding names what it refused: not a hidden name
    return errors.SqlBlocked(
        mask("; ".join(f.message for f in verdict.findings), names),
        findings=mask_fields([f.as_dict() for f in verdict.findings], names),
        codes=verdict.codes,
    )


def hidden_names(databases: Databases, database: str | None) -> list[str]:
    """The names to mask in what is shown about ``database`` (none without a database)."""
    if database is None:
        return []
    policy = databases.policy(database)
    return hidden_names_of(policy.hidden_columns, policy.hidden_tables)


def verdict_view(databases: Databases, verdict: safety.Verdict, database: str | None) -> dict[str, Any]:
    """The verdict as shown to a client, hidden names masked."""
    return mask_fields(verdict.as_dict(), hidden_names(databases, database))  # type: ignore[no-any-return]


def _enforce_size(databases: Databases, sql: str, database: str | None) -> None:
    limits = databases.target(database).settings.limits if database else Limits()
    size = len(sql.encode("utf-8"))
    if size > limits.max_sql_bytes:
        setting = f"databases.{database}.limits.max_sql_bytes" if database else "the default max_sql_bytes"
        raise errors.SqlTooLarge(
            f"SQL is {size} bytes; {setting} allows {limits.max_sql_bytes}",
            size=size, limit=limits.max_sql_bytes,
        )


def allowed_now(databases: Databases, database: str, sql: str) -> bool:
    """Whether the database's *current* policy allows ``sql`` (verdicts cached per policy object, no metric).

    Stored SQL (approved examples) is re-checked at use: a column hidden since it was approved must not
    come back through a few-shot example or an exact answer.
    """
    try:
        return _verdicts.check(sql, databases.policy(database)).allowed
    except errors.GatewayError:  # the database is gone: nothing of it is usable
        return False
