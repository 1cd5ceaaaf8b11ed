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

# The planner's most common values of the given text columns, when it kept a list (ANALYZE): one query for
# every column instead of one GROUP BY each. Row-secured tables are not listed by pg_stats to a role under
# row-level security, so they are sampled as before.
MCV_SQL = """
SELECT s.schemaname AS schema, s.tablename AS table, s.attname AS column, s.null_frac,
       s.most_common_vals::text::text[] AS vals, s.most_common_freqs AS freqs
FROM pg_stats s
JOIN unnest($1::text[], $2::text[], $3::text[]) AS w(sch, tab, col)
  ON s.schemaname = w.sch AND s.tablename = w.tab AND s.attname = w.col
WHERE s.most_common_vals IS NOT NULL
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


async def complete_value_lists(target: Target, columns: Sequence[tuple[str, str, str]],
                               limit: int) -> dict[tuple[str, str, str], list[str]]:
    """(schema, table, column) -> every distinct non-empty value, most frequent first, for the text columns
    whose planner statistics list all their values (at most ``limit``); columns without such a list are
    absent (sample them with :func:`distinct_values`)."""
    if not columns:
        return {}
    async with _read_only(target) as conn:
        rows = await conn.fetch(MCV_SQL, [c[0] for c in columns], [c[1] for c in columns], [c[2] for c in columns])
    out: dict[tuple[str, str, str], list[str]] = {}
    for r in rows:
        vals, freqs = r["vals"], r["freqs"]
        if vals is None or freqs is None or len(vals) > limit or sum(freqs) + r["null_frac"] < MCV_COMPLETE:
            continue
        ranked = sorted(zip(vals, freqs, strict=False), key=lambda vf: (-vf[1], vf[0]))
        found = [v for v, _ in ranked if v]
        if found:
            out[(r["schema"], r["table"], r["column"])] = found
    return out


async def catalog_version(target: Target) -> str:
    """A fingerprint of the catalog that changes when a relation, column, comment, key or grant does."""
    async with _read_only(target) as conn:
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
        return await conn.fetchval(TRGM_SQL)


async def trigram_scores(target: Target, trgm_schema: str, phrases: Sequence[str], values: Sequence[str],
                         threshold: float) -> list[tuple[int, int, float]]:
    """(phrase index, value index, similarity) for every pair scoring at least ``threshold`` (0-based)."""
    if not phrases or not values:
        return []
    sql = MATCH_SQL.format(fn=f"{quote_ident(trgm_schema)}.similarity")
    async with _read_only(target) as conn:
        rows = await conn.fetch(sql, list(phrases), list(values), threshold)
    return [(int(r["phrase"]) - 1, int(r["value"]) - 1, float(r["score"])) for r in rows]
