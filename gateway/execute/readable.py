"""What a caller's Postgres role may read: one catalog query per (database, role), and a schema cut to it.

Postgres answers ``has_column_privilege`` for any role, so the gateway's own connection asks about the
caller's role without becoming it. A column is readable when the role may SELECT it (a table-level GRANT
covers every column); a table when at least one of its columns is. ``row_security`` tells which tables'
rows depend on who reads them: row-level security enabled, and views and foreign tables, whose rows come
from another owner's reads or a per-role user mapping.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import asyncpg

from gateway import errors
from gateway.execute import faults
from gateway.execute.introspect import ForeignKey, Schema, TableInfo
from gateway.execute.pool import Target

READABLE_SQL = """
SELECT n.nspname AS schema, c.relname AS table, c.relrowsecurity OR c.relkind IN ('v', 'f') AS row_security,
       ARRAY(SELECT a.attname::text FROM pg_attribute a
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
               AND has_column_privilege(COALESCE($1::name, current_user), c.oid, a.attnum, 'SELECT')
             ORDER BY a.attnum) AS columns
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND NOT c.relispartition
"""


@dataclass(frozen=True, slots=True)
class Readable:
    """``columns``: (schema, table) -> the columns the role may SELECT (tables with none are absent);
    ``row_security``: the tables among them whose rows depend on the reader."""

    role: str | None
    columns: dict[tuple[str, str], frozenset[str]]
    row_security: frozenset[tuple[str, str]]


async def readable(target: Target, role: str | None) -> Readable:
    """What ``role`` (None: the gateway's own login role) may read on ``target``.

    Raises ``unknown_pg_role`` when no such role exists, ``database_unavailable`` when the database is down.
    """
    try:
        # Bounded on the client side too: a frozen server answers no statement_timeout.
        async with asyncio.timeout(target.client_timeout_s()), \
                target.pool.acquire(timeout=target.settings.limits.acquire_timeout_s) as conn:
            rows = await conn.fetch(READABLE_SQL, role)
    except asyncpg.UndefinedObjectError as exc:  # has_column_privilege: role "..." does not exist
        raise errors.UnknownPgRole(
            f"the Postgres role {role!r} this caller is mapped to does not exist in database {target.name!r}; "
            "an administrator must map the key to an existing role (keys create --pg-role)",
            database=target.name) from exc
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.database_error(target.name, exc, fault) from exc
    columns = {(r["schema"], r["table"]): frozenset(r["columns"]) for r in rows if r["columns"]}
    secured = frozenset((r["schema"], r["table"]) for r in rows if r["row_security"] and r["columns"])
    return Readable(role, columns, secured)


def restrict(schema: Schema, allowed: Readable) -> Schema:
    """``schema`` cut to what ``allowed`` may read: unreadable tables and columns go, and so do keys that
    name an unreadable column (a key line would show its name)."""
    kept: dict[str, tuple[TableInfo, frozenset[str]]] = {}
    for table in schema.tables:
        names = allowed.columns.get((table.schema, table.name))
        if names:
            kept[table.qualified_name] = (table, names)
    tables: list[TableInfo] = []
    for table, names in kept.values():
        def shown(fk: ForeignKey, names: frozenset[str] = names) -> bool:
            ref = kept.get(fk.ref_table)
            return set(fk.columns) <= names and ref is not None and set(fk.ref_columns) <= ref[1]

        tables.append(TableInfo(
            table.schema, table.name, table.kind, table.comment, table.estimated_rows,
            [c for c in table.columns if c.name in names],
            table.primary_key if set(table.primary_key) <= names else [],
            [fk for fk in table.foreign_keys if shown(fk)],
        ))
    return Schema(schema.database, tables)
