"""Read a target database's schema from the catalogs: tables, columns, types, keys and comments.

Only relations and columns the connecting role may SELECT are listed (column privileges included, as
``nl2sql-gateway rules grants`` sets them), so what the gateway shows is what it can run.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any

import asyncpg

from gateway.execute import faults
from gateway.execute.pool import Target

TABLES_SQL = """
SELECT c.oid, n.nspname AS schema, c.relname AS name,
       CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'v' THEN 'view'
                      WHEN 'm' THEN 'materialized_view' WHEN 'f' THEN 'foreign_table' END AS kind,
       obj_description(c.oid, 'pg_class') AS comment,
       c.reltuples::bigint AS estimated_rows
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND NOT c.relispartition
  AND ($1 OR has_any_column_privilege(c.oid, 'SELECT'))
  AND ($2::oid[] IS NULL OR c.oid = ANY($2::oid[]))
ORDER BY n.nspname, c.relname
"""

COLUMNS_SQL = """
SELECT a.attrelid AS oid, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
       NOT a.attnotnull AS nullable, col_description(a.attrelid, a.attnum) AS comment
FROM pg_attribute a
WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
  AND ($2 OR has_column_privilege(a.attrelid, a.attnum, 'SELECT'))
ORDER BY a.attrelid, a.attnum
"""

KEYS_SQL = """
SELECT con.conrelid AS oid, con.contype::text AS kind,
       ARRAY(SELECT att.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = k.attnum
             ORDER BY k.ord) AS columns,
       fn.nspname AS ref_schema, fc.relname AS ref_table,
       ARRAY(SELECT att.attname FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute att ON att.attrelid = con.confrelid AND att.attnum = k.attnum
             ORDER BY k.ord) AS ref_columns
FROM pg_constraint con
LEFT JOIN pg_class fc ON fc.oid = con.confrelid
LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace
WHERE con.conrelid = ANY($1::oid[]) AND con.contype IN ('p', 'f')
ORDER BY con.conrelid, con.conname
"""


@dataclass(slots=True)
class ColumnInfo:
    name: str
    type: str
    nullable: bool
    comment: str | None = None


@dataclass(slots=True)
class ForeignKey:
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


@dataclass(slots=True)
class TableInfo:
    schema: str
    name: str
    kind: str
    comment: str | None
    estimated_rows: int
    columns: list[ColumnInfo] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)

    @property
    def qualified_name(self) -> str:
        return self.name if self.schema == "public" else f"{self.schema}.{self.name}"


@dataclass(slots=True)
class Schema:
    database: str
    tables: list[TableInfo]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self, name: str) -> TableInfo | None:
        """The table a rule names: exactly as spelled, else without regard to case (a rule key ``notes`` or
        ``Notes`` names the table created as ``"Notes"``)."""
        lowered = name.lower()
        exact = next((t for t in self.tables if lowered in {t.name, t.qualified_name, f"{t.schema}.{t.name}"}), None)
        if exact is not None:
            return exact
        return next((t for t in self.tables
                     if lowered in {t.name.lower(), t.qualified_name.lower(), f"{t.schema}.{t.name}".lower()}), None)


async def introspect(target: Target, *, everything: bool = False) -> Schema:
    """The schema of ``target`` as its pool's role may read it; DatabaseUnavailable when it cannot be reached.

    ``everything``: every table and column, readable or not (``rules check`` looks for the names a rule
    hides, which a least-privilege role cannot read; the catalogs list them to any role).
    """
    try:
        # Three catalog queries on one connection: bounded on the client, as statement_timeout cannot end a
        # wait on a server that stopped answering.
        async with asyncio.timeout(target.client_timeout_s()), \
                target.pool.acquire(timeout=target.settings.limits.acquire_timeout_s) as conn:
            return await introspect_connection(conn, target.name, everything=everything)
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.database_error(target.name, exc, fault) from exc


async def introspect_connection(conn: asyncpg.Connection, database: str, *, everything: bool = False,
                                only: list[int] | None = None) -> Schema:
    """As :func:`introspect`, on ``conn``; ``only``: just the relations of these oids (the same privilege
    rules apply to them as to a whole read)."""
    async with conn.transaction(readonly=True):
        table_rows = await conn.fetch(TABLES_SQL, everything, only)
        oids = [r["oid"] for r in table_rows]
        column_rows = await conn.fetch(COLUMNS_SQL, oids, everything)
        key_rows = await conn.fetch(KEYS_SQL, oids)
    tables = {
        r["oid"]: TableInfo(r["schema"], r["name"], r["kind"], r["comment"], max(int(r["estimated_rows"]), 0))
        for r in table_rows
    }
    for r in column_rows:
        tables[r["oid"]].columns.append(ColumnInfo(r["name"], r["type"], r["nullable"], r["comment"]))
    for r in key_rows:
        table = tables[r["oid"]]
        if r["kind"] == "p":
            table.primary_key = list(r["columns"])
        else:
            ref = r["ref_table"] if r["ref_schema"] == "public" else f"{r['ref_schema']}.{r['ref_table']}"
            table.foreign_keys.append(ForeignKey(list(r["columns"]), ref, list(r["ref_columns"])))
    return Schema(database, list(tables.values()))
