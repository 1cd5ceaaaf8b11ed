"""The tables a question may be about, found by the catalogs themselves, and only those introspected.

Used while a large database's first schema read is still running (gateway.context.cache): instead of
waiting for the whole schema, one catalog query matches the question's words against table names, column
names and table and column comments, ranks tables by how many of the words they match (a word in the
table's own name counts three times), and the best ``limit`` of them plus their foreign-key neighbours are
introspected with the ordinary introspection, restricted to their oids.

Secrecy: a table or column the rules hide, or that the gateway's role (or the caller's ``role``) may not
read, neither matches nor ranks: the rules' hidden names are passed to the query and left out there, and
privileges are checked per column as introspection does. What is introspected then goes through the same
rules, views and redactor as a whole read.
"""

from __future__ import annotations

import asyncio

import asyncpg

from gateway import errors
from gateway.execute import faults
from gateway.execute.introspect import Schema, introspect_connection
from gateway.execute.pool import Target

CANDIDATES_SQL = r"""
WITH pats AS (SELECT p, i::int AS i FROM unnest($1::text[]) WITH ORDINALITY u(p, i)),
rels AS (
  SELECT c.oid, lower(c.relname) AS bare,
         lower(CASE WHEN n.nspname = 'public' THEN c.relname ELSE n.nspname || '.' || c.relname END) AS qualified,
         lower(n.nspname || '.' || c.relname) AS full_name,
         c.relname, d.description AS comment
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'
    AND NOT c.relispartition
    AND has_any_column_privilege(c.oid, 'SELECT')
    AND CASE WHEN $3::text IS NULL THEN true
             WHEN NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $3::text) THEN false
             ELSE has_any_column_privilege($3::text, c.oid, 'SELECT') END
    AND NOT (lower(c.relname) = ANY($2::text[]))
    AND NOT (lower(n.nspname || '.' || c.relname) = ANY($2::text[]))
),
-- Columns whose name or comment matches any word: found by one filtered scan each (privileges are checked
-- on these few, not on every column of the database).
cols AS MATERIALIZED (
  SELECT a.attrelid AS oid, a.attnum, a.attname, NULL::text AS comment
  FROM pg_attribute a
  WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attname ILIKE ANY(ARRAY(SELECT p FROM pats))
  UNION ALL
  SELECT a.attrelid, a.attnum, a.attname, d.description
  FROM pg_description d JOIN pg_attribute a ON a.attrelid = d.objoid AND a.attnum = d.objsubid
  WHERE d.classoid = 'pg_class'::regclass AND d.objsubid > 0 AND NOT a.attisdropped
    AND d.description ILIKE ANY(ARRAY(SELECT p FROM pats))
),
hits AS (
  SELECT r.oid, p.i, 3 AS w FROM rels r JOIN pats p ON r.relname ILIKE p.p
  UNION ALL
  SELECT r.oid, p.i, 1 FROM rels r JOIN pats p ON r.comment ILIKE p.p
  UNION ALL
  SELECT r.oid, p.i, 1
  FROM cols c JOIN rels r ON r.oid = c.oid
  JOIN pats p ON c.attname ILIKE p.p OR c.comment ILIKE p.p
  WHERE NOT (r.bare || '.' || lower(c.attname) = ANY($4::text[]))
    AND NOT (r.qualified || '.' || lower(c.attname) = ANY($4::text[]))
    AND NOT (r.full_name || '.' || lower(c.attname) = ANY($4::text[]))
    AND has_column_privilege(c.oid, c.attnum, 'SELECT')
    AND CASE WHEN $3::text IS NULL THEN true
             WHEN NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $3::text) THEN false
             ELSE has_column_privilege($3::text, c.oid, c.attnum, 'SELECT') END
),
per_word AS (SELECT oid, i, max(w) AS w FROM hits GROUP BY oid, i)
SELECT oid FROM per_word GROUP BY oid ORDER BY count(*) DESC, sum(w) DESC, oid LIMIT $5
"""

NEIGHBOURS_SQL = """
SELECT DISTINCT other FROM (
  SELECT confrelid AS other FROM pg_constraint WHERE contype = 'f' AND conrelid = ANY($1::oid[])
  UNION ALL
  SELECT conrelid FROM pg_constraint WHERE contype = 'f' AND confrelid = ANY($1::oid[])
) n WHERE NOT (other = ANY($1::oid[])) LIMIT $2
"""


# The relations the rules hide, introspected with the candidates (then hidden by the rules like any other), so
# that the redactor knows their columns as it does on a whole read.
HIDDEN_SQL = """
SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND (lower(c.relname) = ANY($1::text[]) OR lower(n.nspname || '.' || c.relname) = ANY($1::text[]))
"""


# Each pattern is matched against every column name and comment of the database: the query's cost grows with
# their number, so a question of thousands of words is cut to the longest few (identifiers such as
# ``account_asset_1341`` and whole words first; words under 3 characters match almost everything anyway).
MAX_PATTERNS = 32
MIN_WORD = 3


def patterns(words: set[str]) -> list[str]:
    """``ILIKE`` patterns for the longest ``MAX_PATTERNS`` of ``words`` (at least ``MIN_WORD`` characters),
    each matched anywhere in a name or comment (wildcards escaped)."""
    kept = sorted((w for w in words if len(w) >= MIN_WORD), key=lambda w: (-len(w), w))[:MAX_PATTERNS]
    out = []
    for word in sorted(kept):
        escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        out.append(f"%{escaped}%")
    return out


async def candidate_schema(target: Target, words: set[str], *, hidden_tables: frozenset[str],
                           hidden_columns: frozenset[str], role: str | None = None, limit: int = 50) -> Schema:
    """The tables of ``target`` that best match ``words`` (at most ``limit``) and their foreign-key
    neighbours (at most ``limit`` more), introspected as the gateway's role reads them. ``hidden_tables``
    and ``hidden_columns`` (the rules', lower case, ``table`` / ``table.column``) neither match nor rank;
    with ``role``, neither does what that role may not read (an unknown role matches nothing)."""
    try:
        async with asyncio.timeout(target.client_timeout_s()), \
                target.pool.acquire(timeout=target.settings.limits.acquire_timeout_s) as conn:
            # The catalogs are read under the database's statement timeout too, not only the client's bound
            # (local to the transaction: nothing stays on the connection, behind PgBouncer included).
            async with conn.transaction(readonly=True):
                await conn.execute("SELECT set_config('statement_timeout', $1, true)",
                                   str(target.settings.limits.statement_timeout_ms))
                found: list[int] = []
                wanted = patterns(words)
                if wanted:
                    rows = await conn.fetch(CANDIDATES_SQL, wanted, sorted(hidden_tables), role,
                                            sorted(hidden_columns), limit)
                    found = [r["oid"] for r in rows]
                if found:
                    found += [r["other"] for r in await conn.fetch(NEIGHBOURS_SQL, found, limit)]
                if hidden_tables:
                    found += [r["oid"] for r in await conn.fetch(HIDDEN_SQL, sorted(hidden_tables))
                              if r["oid"] not in found]
                return await introspect_connection(conn, target.name, only=found)
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            if isinstance(exc, asyncpg.exceptions.QueryCanceledError):
                raise errors.StatementTimeout(
                    f"reading the catalogs of {target.name!r} for the question's tables was cancelled by the "
                    "database (statement_timeout); ask again once the schema is read (/readyz)",
                    database=target.name) from exc
            raise
        raise faults.database_error(target.name, exc, fault) from exc
