"""What a Postgres role may do in a target database, read from the catalogs' privilege functions.

The second layer behind the static check is the role itself: :mod:`gateway.rules.grants` turns these
facts into problems (a hidden column it can read, anything it can write, superuser, BYPASSRLS) and the
grants that fix them. Postgres answers ``has_column_privilege`` and friends for any role, so the gateway's
own connection can ask about a key's mapped role too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import asyncpg

from gateway.execute import faults
from gateway.execute.introspect import Schema, introspect_connection
from gateway.execute.pool import Target

USER_RELATIONS = """
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
"""

COLUMNS_SQL = """
SELECT n.nspname AS schema, c.relname AS table, a.attname AS column
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND a.attnum > 0 AND NOT a.attisdropped
  AND has_column_privilege($1::name, c.oid, a.attnum, 'SELECT')
ORDER BY 1, 2, a.attnum
"""

WRITABLE_SQL = f"""
SELECT n.nspname AS schema, c.relname AS table
{USER_RELATIONS}
  AND (has_table_privilege($1::name, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER')
       OR has_any_column_privilege($1::name, c.oid, 'INSERT, UPDATE'))
ORDER BY 1, 2
"""

CREATE_SQL = """
SELECT nspname FROM pg_namespace
WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg\\_%'
  AND has_schema_privilege($1::name, oid, 'CREATE')
ORDER BY 1
"""


@dataclass(frozen=True, slots=True)
class RoleFacts:
    """What ``role`` may do in ``database``; ``exists`` False when no such role (the rest is then empty)."""

    database: str
    role: str
    exists: bool = True
    superuser: bool = False
    bypassrls: bool = False
    readable: tuple[tuple[str, str, str], ...] = ()  # (schema, table, column) it may SELECT
    writable: tuple[tuple[str, str], ...] = ()  # (schema, table) it may INSERT/UPDATE/DELETE/TRUNCATE
    create_schemas: tuple[str, ...] = ()
    create_database: bool = False


async def role_facts(conn: asyncpg.Connection, database: str, role: str | None = None) -> RoleFacts:
    """The facts for ``role`` (default: the connection's own role) on the database ``conn`` is connected to."""
    name = role or await conn.fetchval("SELECT current_user::text")
    row = await conn.fetchrow("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1", name)
    if row is None:
        return RoleFacts(database, name, exists=False)
    readable = await conn.fetch(COLUMNS_SQL, name)
    writable = await conn.fetch(WRITABLE_SQL, name)
    schemas = await conn.fetch(CREATE_SQL, name)
    create_db = await conn.fetchval("SELECT has_database_privilege($1::name, current_database(), 'CREATE')", name)
    return RoleFacts(
        database, name, superuser=row["rolsuper"], bypassrls=row["rolbypassrls"],
        readable=tuple((r["schema"], r["table"], r["column"]) for r in readable),
        writable=tuple((r["schema"], r["table"]) for r in writable),
        create_schemas=tuple(r["nspname"] for r in schemas), create_database=bool(create_db),
    )


async def target_role_facts(target: Target, roles: list[str | None]) -> list[RoleFacts]:
    """Facts for each role on ``target`` (None: the role the pool connects as); DatabaseUnavailable if down."""
    try:
        async with asyncio.timeout(target.client_timeout_s() * max(1, len(roles))), \
                target.pool.acquire(timeout=target.settings.limits.acquire_timeout_s) as conn:
            async with conn.transaction(readonly=True):
                return [await role_facts(conn, target.name, role) for role in roles]
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.database_error(target.name, exc, fault) from exc


async def admin_schema(admin_dsn: str, database: str, password: str | None = None) -> tuple[Schema, str]:
    """The whole schema as an admin sees it (hidden columns included), and Postgres's name of the database."""
    conn = await asyncpg.connect(admin_dsn, password=password)
    try:
        return await introspect_connection(conn, database), str(await conn.fetchval("SELECT current_database()"))
    finally:
        await conn.close()


async def login_role(dsn: str, password: str | None = None) -> str:
    """The role a DSN logs in as: its user name, or the server's answer when the DSN names none."""
    user = urlsplit(dsn).username
    if user:
        return unquote(user)
    conn = await asyncpg.connect(dsn, password=password)
    try:
        return str(await conn.fetchval("SELECT session_user::text"))
    finally:
        await conn.close()


async def run_admin_script(admin_dsn: str, sql: str) -> None:
    """Run a generated script (one simple-protocol call; the script holds its own BEGIN/COMMIT)."""
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()
