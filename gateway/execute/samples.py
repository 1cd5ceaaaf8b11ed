"""Read-only helper queries for the context stage: column statistics, distinct values, trigram matching.

The SQL here is the gateway's own (identifiers quoted, values bound as parameters), never a client's; it
still runs in a READ ONLY transaction with the target's statement timeout, like every other query.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg

from gateway.execute import faults, scope
from gateway.execute.pool import Target

STATS_SQL = """
SELECT s.schemaname AS schema, s.tablename AS table, s.attname AS column, s.n_distinct, s.null_frac,
       s.most_common_vals::text AS vals, s.most_common_freqs AS freqs
FROM pg_stats s
WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema')
"""

# Parses the planner's most-common-value lists (read as text, which any column type allows) of text columns.
MCV_PARSE_SQL = """
SELECT i, v::text[] AS vals FROM unnest($1::text[]) WITH ORDINALITY AS u(v, i)
"""

# A cheap fingerprint of the catalog parts the context stage reads: a created, dropped, altered, commented or
# re-granted relation changes the row versions (xmin) of pg_class, pg_description or pg_constraint. ANALYZE
# and VACUUM update pg_class in place (xmin unchanged), so they do not count as changes.
CATALOG_VERSION_SQL = """
SELECT (SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM pg_class
         WHERE relkind IN ('r', 'p', 'v', 'm', 'f') AND relpersistence <> 't')
    || '/' || (SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM pg_description)
    || '/' || (SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM pg_constraint)
    || '/' || (SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM pg_namespace)
"""

# Whole-column frequencies at or above this sum mean the planner's list holds every value of the column.
MCV_COMPLETE = 0.999

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


# The catalog-wide reads of a schema refresh (planner statistics of every column) may take longer than a
# client's query on a database of thousands of tables; the refresh as a whole is bounded by
# context.refresh_timeout_s.
CATALOG_TIMEOUT_MS = 60_000


@asynccontextmanager
async def _read_only(target: Target, role: str | None = None, claims: Sequence[tuple[str, str]] = (), *,
                     catalog: bool = False) -> AsyncIterator[asyncpg.Connection]:
    """A READ ONLY transaction with the target's statement timeout, as ``role`` with ``claims`` set when given
    (gateway.execute.scope): the caller's GRANTs and row-level security then decide what the read returns.
    ``catalog``: a catalog-wide read, allowed at least ``CATALOG_TIMEOUT_MS``."""
    limits = target.settings.limits
    timeout_ms = max(limits.statement_timeout_ms, CATALOG_TIMEOUT_MS) if catalog else limits.statement_timeout_ms
    bound = target.client_timeout_s() + (timeout_ms - limits.statement_timeout_ms) / 1000
    try:
        async with asyncio.timeout(bound), \
                target.pool.acquire(timeout=limits.acquire_timeout_s) as conn, conn.transaction(readonly=True):
            await conn.execute(f"SET LOCAL statement_timeout = {int(timeout_ms)}")
            await scope.enter(conn, role, claims)
            yield conn
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.database_error(target.name, exc, fault) from exc


Key = tuple[str, str, str]  # (schema, table, column)


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Planner statistics: n_distinct per column (negative: a fraction of the rows) and, where ANALYZE kept
    one, the most-common-value list as text with its frequencies and the column's share of NULLs."""

    n_distinct: dict[Key, float]
    common: dict[Key, tuple[str, list[float], float]]


async def column_stats(target: Target) -> ColumnStats:
    """Every column's planner statistics the gateway's role may read, in one query."""
    async with _read_only(target, catalog=True) as conn:
        rows = await conn.fetch(STATS_SQL)
    n_distinct = {(r["schema"], r["table"], r["column"]): float(r["n_distinct"]) for r in rows}
    common = {(r["schema"], r["table"], r["column"]): (r["vals"], list(r["freqs"]), float(r["null_frac"]))
              for r in rows if r["vals"] is not None and r["freqs"] is not None}
    return ColumnStats(n_distinct, common)


async def column_n_distinct(target: Target) -> dict[Key, float]:
    """Planner statistics: (schema, table, column) -> n_distinct (negative: a fraction of the rows)."""
    return (await column_stats(target)).n_distinct


async def complete_value_lists(target: Target, stats: ColumnStats, columns: Sequence[Key],
                               limit: int) -> dict[Key, list[str]]:
    """(schema, table, column) -> every distinct non-empty value, most frequent first, for the text
    ``columns`` whose most-common-value list holds all their values (at most ``limit``), read from the
    statistics (one round trip parses them all); the others are absent (sample them with
    :func:`distinct_values`). pg_stats does not show row-secured tables to a role under row-level security,
    so those are always sampled, under the caller's policy."""
    keys = [k for k in columns if k in stats.common and len(stats.common[k][1]) <= limit
            and sum(stats.common[k][1]) + stats.common[k][2] >= MCV_COMPLETE]
    if not keys:
        return {}
    async with _read_only(target, catalog=True) as conn:
        rows = await conn.fetch(MCV_PARSE_SQL, [stats.common[k][0] for k in keys])
    out: dict[Key, list[str]] = {}
    for r in rows:
        key = keys[int(r["i"]) - 1]
        vals, freqs = r["vals"], stats.common[key][1]
        if vals is None or len(vals) != len(freqs):
            continue
        ranked = sorted(zip(vals, freqs, strict=True), key=lambda vf: (-vf[1], vf[0] or ""))
        found = [v for v, _ in ranked if v]
        if found:
            out[key] = found
    return out


RELATIONS_SQL = """
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
"""


async def relation_count(target: Target) -> int:
    """How many tables, views and foreign tables the database has (outside the system schemas); one count."""
    async with _read_only(target, catalog=True) as conn:
        return int(await conn.fetchval(RELATIONS_SQL))


async def catalog_version(target: Target) -> str:
    """A fingerprint of the catalog that changes when a relation, column, comment, key or grant does."""
    async with _read_only(target, catalog=True) as conn:
        return str(await conn.fetchval(CATALOG_VERSION_SQL))


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
