"""Row filters at run time: the text a caller's statement becomes before it runs (``the gateway decides``).

On a database whose rules give tables a ``row_filter``, every checked statement, from a client (``/v1/sql``,
MCP ``run_sql``) or from the LLM (each attempt of ``/v1/ask``), is rewritten by
:func:`gateway.rules.row_filters.rewrite` with the caller's claims bound as parameters; the rewritten text
goes through the whole safety check again, and that exact text runs with its parameters. On a database
without row filters nothing changes.

The rewrite needs to know which names are base tables (a view's rows may come from a filtered table): the
introspected relations, kept ``TTL_S`` per database. A relation created since is unknown, hence refused,
until the next load.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gateway import errors, safety
from gateway.execute import Target
from gateway.execute.introspect import introspect
from gateway.execute.rls import table_ancestors
from gateway.findings import Finding
from gateway.rules import RuleSet
from gateway.rules.row_filters import ClaimMissing, Relation, Unenforceable, rewrite
from gateway.safety.statement import char_offset

TTL_S = 30.0
_KEY = "row_filter_relations"


class Databases(Protocol):
    extras: dict[str, Any]

    def target(self, name: str) -> Target: ...

    def policy(self, name: str | None) -> safety.Policy: ...

    def ruleset(self, name: str) -> RuleSet: ...


@dataclass(frozen=True, slots=True)
class Filtered:
    """What runs: the (possibly rewritten) text, its parameters and the verdict on that text."""

    sql: str
    args: tuple[str, ...]
    verdict: safety.Verdict
    rewritten: bool


def has_row_filters(databases: Databases, database: str) -> bool:
    return bool(databases.ruleset(database).row_filters)


async def relations(databases: Databases, database: str) -> tuple[Relation, ...]:
    """The database's relations as its pool's role sees them, at most ``TTL_S`` old."""
    cache: dict[str, tuple[float, tuple[Relation, ...]]] = databases.extras.setdefault(_KEY, {})
    hit = cache.get(database)
    if hit is not None and time.monotonic() - hit[0] < TTL_S:
        return hit[1]
    target = databases.target(database)
    schema = await introspect(target)
    ancestors = await table_ancestors(target)
    found = tuple(Relation(t.schema, t.name, t.kind, tuple((c.name, c.type) for c in t.columns),
                           ancestors.get((t.schema, t.name), ())) for t in schema.tables)
    cache[database] = (time.monotonic(), found)
    return found


def cached_relations(databases: Databases, database: str) -> tuple[Relation, ...] | None:
    """The relations last loaded, however old (None when never loaded): for the synchronous ``check``."""
    hit = databases.extras.get(_KEY, {}).get(database)
    return None if hit is None else hit[1]


def explain_refused(sql: str, claims: Sequence[tuple[str, str]], verdict: safety.Verdict) -> safety.Verdict | None:
    """The refusal of an EXPLAIN for a caller under a row policy (None otherwise): the plan's estimates come
    from statistics over every tenant's rows, so they tell how many rows hold another tenant's value."""
    if not claims or not verdict.allowed or verdict.statement_kind != "explain":
        return None
    finding = Finding("row_filter_unenforceable", "EXPLAIN shows the planner's estimates, drawn from every "
                      "tenant's rows: not for a caller under a row policy", None, None)
    return safety.Verdict(sql, (finding,))


async def filtered(databases: Databases, database: str, sql: str, claims: Sequence[tuple[str, str]],
                   verdict: safety.Verdict | None = None, bound: Sequence[str] = ()) -> Filtered:
    """``sql``, which the safety check allowed (``verdict``, when the caller has it), as it must run for a
    caller with ``claims``; ``bound``: the values of its own ``$1 ...`` (a template's parameters), which
    come first in the args."""
    if verdict is None:
        verdict = safety.Verdict(sql, (), "select")
    refused = explain_refused(sql, claims, verdict)
    if refused is not None:
        return Filtered(sql, tuple(bound), refused, False)
    if not verdict.allowed or not has_row_filters(databases, database):
        return Filtered(sql, tuple(bound), verdict, False)
    return filter_with(databases, database, sql, claims, await relations(databases, database), bound)


def filter_with(databases: Databases, database: str, sql: str, claims: Sequence[tuple[str, str]],
                known: Sequence[Relation] | None, bound: Sequence[str] = ()) -> Filtered:
    """The rewrite and the verdict on its text; raises ``row_policy_claim_missing``. A refusal is a verdict
    with a ``row_filter_unenforceable`` finding (position in ``sql``)."""
    rules = databases.ruleset(database)
    try:
        out = rewrite(sql, rules.row_filters, dict(claims), known, hidden=rules.is_hidden_column,
                      functions=rules.extra_functions, bound=bound)
    except Unenforceable as exc:
        finding = Finding("row_filter_unenforceable", str(exc), None, char_offset(sql, exc.position))
        return Filtered(sql, tuple(bound), safety.Verdict(sql, (finding,)), False)
    except ClaimMissing as exc:
        raise errors.RowPolicyClaimMissing(str(exc), claim=exc.claim, table=exc.table) from None
    if not out.filtered:
        return Filtered(sql, tuple(bound), safety.check(sql, databases.policy(database)), False)
    # The whole check again, on the text that runs: the rewrite must not be what lets something through.
    return Filtered(out.sql, out.args, safety.check(out.sql, databases.policy(database)), True)
