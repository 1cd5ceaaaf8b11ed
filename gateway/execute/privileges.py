"""What a Postgres role may do in a target database, read from the catalogs' privilege functions.

The second layer behind the static check is the role itself: :mod:`gateway.rules.grants` turns these
facts into problems (a hidden column it can read, anything it can write, superuser, BYPASSRLS) and the
grants that fix them. Postgres answers ``has_column_privilege`` and friends for any role, so the gateway's
own connection can ask about a key's mapped role too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
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


# The grantee's memberships whose privileges it inherits (Postgres 16+ keeps the option per grant).
MEMBERSHIPS_SQL = """
SELECT r.rolname AS role, g.rolname AS grantor
FROM pg_auth_members m
JOIN pg_roles r ON r.oid = m.roleid JOIN pg_roles g ON g.oid = m.grantor JOIN pg_roles me ON me.oid = m.member
WHERE me.rolname = $1 AND {inherits}
ORDER BY 1, 2
"""

# Which of the candidate roles (a role name, 'public') may SELECT which of the columns.
READERS_SQL = """
SELECT c.s AS schema, c.t AS table, c.col AS column, who.name AS reader
FROM unnest($2::text[], $3::text[], $4::text[]) AS c(s, t, col)
CROSS JOIN unnest($1::text[]) AS who(name)
WHERE has_column_privilege(who.name::name, format('%I.%I', c.s, c.t)::regclass, c.col, 'SELECT')
ORDER BY 1, 2, 3, 4
"""

Column = tuple[str, str, str]  # schema, table, column


@dataclass(frozen=True, slots=True)
class Exposure:
    """Where ``role``'s SELECT on given (hidden) columns comes from.

    ``readable`` maps each column it may read to its sources: ``superuser``, ``PUBLIC``, ``role NAME`` (a
    role it inherits from) or ``a direct grant`` (none of those, e.g. a grant made by another grantor).
    ``inherited``: the (role, grantor) memberships through which it reads any of them.
    """

    role: str
    exists: bool = True
    superuser: bool = False
    bypassrls: bool = False
    readable: dict[Column, tuple[str, ...]] = field(default_factory=dict)
    inherited: tuple[tuple[str, str], ...] = ()
    inherit_per_grant: bool = True  # Postgres 16+: the inherit option is per membership grant

    @property
    def sources(self) -> list[str]:
        """Every source, once, in a stable order."""
        return sorted({s for found in self.readable.values() for s in found})


async def exposure(conn: asyncpg.Connection, role: str, columns: list[Column]) -> Exposure:
    """Where ``role`` may read ``columns`` from (asked of the catalogs through any connection)."""
    row = await conn.fetchrow("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1", role)
    if row is None:
        return Exposure(role, exists=False, readable={})
    per_grant = conn.get_server_version().major >= 16
    inherits = "m.inherit_option" if per_grant else "me.rolinherit"
    memberships = [(r["role"], r["grantor"]) for r in await conn.fetch(MEMBERSHIPS_SQL.format(inherits=inherits),
                                                                        role)]
    via = sorted({m for m, _ in memberships})
    found = await conn.fetch(READERS_SQL, [role, "public", *via], [c[0] for c in columns], [c[1] for c in columns],
                             [c[2] for c in columns])
    readers: dict[Column, set[str]] = {}
    for r in found:
        readers.setdefault((r["schema"], r["table"], r["column"]), set()).add(r["reader"])
    readable: dict[Column, tuple[str, ...]] = {}
    for column, who in readers.items():
        if role not in who:
            continue
        sources = (["superuser"] if row["rolsuper"] else []) + (["PUBLIC"] if "public" in who else [])
        sources += [f"role {m!r}" for m in via if m in who]
        readable[column] = tuple(sources or ["a direct grant"])
    exposing = {m for m in via if any(m in who for column, who in readers.items() if column in readable)}
    return Exposure(role, superuser=row["rolsuper"], bypassrls=row["rolbypassrls"], readable=readable,
                    inherited=tuple((m, g) for m, g in memberships if m in exposing), inherit_per_grant=per_grant)


async def admin_exposure(dsn: str, role: str, columns: list[Column], password: str | None = None) -> Exposure:
    """:func:`exposure` over a connection of its own to ``dsn``."""
    conn = await asyncpg.connect(dsn, password=password)
    try:
        return await exposure(conn, role, columns)
    finally:
        await conn.close()
