"""Read-only helper queries for the context stage: column statistics, distinct values, trigram matching.

The SQL here is the gateway's own (identifiers quoted, values bound as parameters), never a client's; it
still runs in a READ ONLY transaction with the target's statement timeout, like every other query.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import asyncpg

from gateway.execute import faults, scope
from gateway.execute.pool import Target

STATS_SQL = """
SELECT s.schemaname AS schema, s.tablename AS table, s.attname AS column, s.n_distinct
FROM pg_stats s
WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema')
"""

TRGM_SQL = """
SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'
"""

# One round trip scores every (phrase, value) pair; pg_trgm lower-cases and splits words itself.
MATCH_SQL = """
SELECT p.i AS phrase, v.j AS value, {fn}(p.phrase, v.value) AS score
FROM unnest($1::text[]) WITH ORDINALITY AS p(phrase, i),
     unnest($2::text[]) WITH ORDINALITY AS v(value, j)
WHERE {fn}(p.phrase, v.value) >= $3
"""


quote_ident = scope.quote_ident


@asynccontextmanager
async def _read_only(target: Target, role: str | None = None,
                     claims: Sequence[tuple[str, str]] = ()) -> AsyncIterator[asyncpg.Connection]:
    """A READ ONLY transaction with the target's statement timeout, as ``role`` with ``claims`` set when given
    (gateway.execute.scope): the caller's GRANTs and row-level security then decide what the read returns."""
    limits = target.settings.limits
    try:
        async with asyncio.timeout(target.client_timeout_s()), \
                target.pool.acquire(timeout=limits.acquire_timeout_s) as conn, conn.transaction(readonly=True):
            await conn.execute(f"SET LOCAL statement_timeout = {int(limits.statement_timeout_ms)}")
            await scope.enter(conn, role, claims)
            yield conn
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.database_error(target.name, exc, fault) from exc


async def column_n_distinct(target: Target) -> dict[tuple[str, str, str], float]:
    """Planner statistics: (schema, table, column) -> n_distinct (negative: a fraction of the rows)."""
    async with _read_only(target) as conn:
        rows = await conn.fetch(STATS_SQL)
    return {(r["schema"], r["table"], r["column"]): float(r["n_distinct"]) for r in rows}


async def distinct_values(target: Target, schema: str, table: str, column: str, limit: int, *,
                          role: str | None = None, claims: Sequence[tuple[str, str]] = ()) -> list[str] | None:
    """Up to ``limit`` distinct non-empty values, most frequent first; None when there are more than ``limit``.

    ``role`` and ``claims``: read as that caller (gateway.execute.scope), so its GRANTs and row policy apply.
    Failures other than an unreachable database (a column-level GRANT, a timeout, a row-policy value the
    policy cannot read) return None: samples are a nicety, never a reason to fail a question, and a failed
    read as the caller never falls back to an unfiltered one.
    """
    col = quote_ident(column)
    sql = (f"SELECT {col}::text AS v FROM {quote_ident(schema)}.{quote_ident(table)} "
           f"WHERE {col} IS NOT NULL AND {col}::text <> '' GROUP BY {col} ORDER BY count(*) DESC, {col}::text "
           f"LIMIT {int(limit) + 1}")
    try:
        async with _read_only(target, role, claims) as conn:
            rows = await conn.fetch(sql)
    except asyncpg.PostgresError:
        return None
    values = [r["v"] for r in rows]
    return None if len(values) > limit else values


async def trigram_schema(target: Target) -> str | None:
    """The schema pg_trgm is installed in, or None when the extension is not there."""
    async with _read_only(target) as conn:
        found: str | None = await conn.fetchval(TRGM_SQL)
        return found


async def trigram_scores(target: Target, trgm_schema: str, phrases: Sequence[str], values: Sequence[str],
                         threshold: float) -> list[tuple[int, int, float]]:
    """(phrase index, value index, similarity) for every pair scoring at least ``threshold`` (0-based)."""
    if not phrases or not values:
        return []
    sql = MATCH_SQL.format(fn=f"{quote_ident(trgm_schema)}.similarity")
    async with _read_only(target) as conn:
        rows = await conn.fetch(sql, list(phrases), list(values), threshold)
    return [(int(r["phrase"]) - 1, int(r["value"]) - 1, float(r["score"])) for r in rows]
