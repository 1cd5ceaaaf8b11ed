"""The demo database: a small BI schema with deterministic data, built inside Postgres.

``ensure_demo_database(admin_dsn)`` returns a DSN for the ``demo`` database that connects as the read-only
role ``nl2sql_reader``. It builds the database the first time, reuses it while it is up to date, and rebuilds
it when the generator changed (the version is the comment on the database). A build happens in a scratch
database that is renamed at the end, so an interrupted build never leaves a half-filled ``demo`` behind.

The data (about 130,000 rows over regions, employees, customers, categories, products, orders, order_items,
payments and events) comes from ``schema.sql``, ``data.sql`` and ``finish.sql`` beside this module. Every
"random" value is derived from an md5 hash of its row's key, so every machine gets the same rows.

The demo gateway connects as a role that can read the visible columns and do nothing else::

    CREATE ROLE nl2sql_reader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    ALTER ROLE nl2sql_reader SET default_transaction_read_only = on;
    REVOKE CREATE, TEMPORARY ON DATABASE demo FROM PUBLIC;

plus exactly the grants ``nl2sql-gateway rules grants demo`` prints for ``rules/demo.yaml``
(:func:`gateway.rules.grants.grants_sql`): column-level SELECT on every column the rules leave visible,
nothing on ``employees.salary``, ``employees.email`` and ``customers.email``.

Privileges are the real barrier: ``default_transaction_read_only`` is a second layer, which a session may
switch off for itself, and the gateway adds its own READ ONLY transactions on top.
"""

from __future__ import annotations

import hashlib
import logging
import time
from importlib import resources
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import asyncpg

from gateway.execute.introspect import introspect_connection
from gateway.rules.grants import grants_sql
from gateway.rules.loading import load_ruleset, rule_files
from gateway.rules.model import RuleSet

__all__ = [
    "DEMO_DATABASE",
    "GENERATOR_VERSION",
    "READER_ROLE",
    "build_demo_database",
    "demo_version",
    "derive_dsn",
    "ensure_demo_database",
]

DEMO_DATABASE = "demo"
READER_ROLE = "nl2sql_reader"
# Bump when the meaning of the generated data changes without the SQL text changing (rare: the version
# also hashes the SQL files, so editing them is enough to trigger a rebuild).
GENERATOR_VERSION = 1
SQL_PARTS = ("schema.sql", "data.sql", "finish.sql")
# One build at a time per server, whoever asks (the demo command, a test session, a second demo).
_BUILD_LOCK_KEY = 0x6E6C3273716C_01
_VERSION_PREFIX = "nl2sql-gateway demo database, generator "

_log = logging.getLogger(__name__)


def demo_version() -> str:
    """The version recorded on a freshly built demo database, e.g. ``'1-3f2a9c0e1b7d'``."""
    digest = hashlib.sha256()
    for part in SQL_PARTS:
        digest.update(_sql(part).encode())
    return f"{GENERATOR_VERSION}-{digest.hexdigest()[:12]}"


def derive_dsn(
    dsn: str, *, database: str | None = None, user: str | None = None, password: str | None = None
) -> str:
    """Same server as ``dsn``, another database and/or user. A new user drops the old password.

    >>> derive_dsn("postgresql://postgres:pw@db:5432/postgres?sslmode=require", database="demo")
    'postgresql://postgres:pw@db:5432/demo?sslmode=require'
    >>> derive_dsn("postgresql://postgres@/postgres?host=/tmp/pg", database="demo", user="nl2sql_reader")
    'postgresql://nl2sql_reader@/demo?host=/tmp/pg'
    """
    parts = urlsplit(dsn)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ValueError("expected a postgresql:// URL")
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if user is not None:
        userinfo = quote(user, safe="") + (":" + quote(password, safe="") if password is not None else "")
        at = "@"
    path = "/" + quote(database, safe="") if database is not None else parts.path
    return urlunsplit((parts.scheme, f"{userinfo}{at}{hostport}", path, parts.query, parts.fragment))


async def ensure_demo_database(
    admin_dsn: str,
    *,
    database: str = DEMO_DATABASE,
    reader_password: str | None = None,
    rebuild: bool = False,
) -> str:
    """Make sure ``database`` holds the current demo data and return a read-only DSN for it.

    ``admin_dsn`` is a superuser DSN on any database of the server (usually ``postgres``). The returned DSN
    connects as ``nl2sql_reader``; pass ``reader_password`` when the server authenticates with passwords.
    """
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute("SELECT pg_advisory_lock($1)", _BUILD_LOCK_KEY)
        try:
            await _ensure_reader_role(admin, reader_password)
            recorded = await admin.fetchval(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", database
            )
            if rebuild or recorded != _VERSION_PREFIX + demo_version():
                await _build(admin, admin_dsn, database)
            await _grant_reader(derive_dsn(admin_dsn, database=database), database)
        finally:
            await admin.execute("SELECT pg_advisory_unlock($1)", _BUILD_LOCK_KEY)
    finally:
        await admin.close()
    return derive_dsn(admin_dsn, database=database, user=READER_ROLE, password=reader_password)


async def build_demo_database(admin_dsn: str, *, database: str = DEMO_DATABASE) -> float:
    """Build ``database`` from scratch (replacing it) and return the seconds it took. Grants not included."""
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute("SELECT pg_advisory_lock($1)", _BUILD_LOCK_KEY)
        try:
            return await _build(admin, admin_dsn, database)
        finally:
            await admin.execute("SELECT pg_advisory_unlock($1)", _BUILD_LOCK_KEY)
    finally:
        await admin.close()


async def _build(admin: asyncpg.Connection, admin_dsn: str, database: str) -> float:
    started = time.perf_counter()
    scratch = f"{database}__building"
    _log.info("building demo database %s (generator %s)", database, demo_version())
    await admin.execute(f"DROP DATABASE IF EXISTS {_ident(scratch)} WITH (FORCE)")
    await admin.execute(f"CREATE DATABASE {_ident(scratch)} TEMPLATE template0 ENCODING 'UTF8'")
    conn = await asyncpg.connect(derive_dsn(admin_dsn, database=scratch))
    try:
        for part in SQL_PARTS:
            await conn.execute(_sql(part))  # one script, one implicit transaction
        await conn.execute("VACUUM (ANALYZE)")  # statistics and visibility map, like a settled database
    finally:
        await conn.close()
    await admin.execute(f"DROP DATABASE IF EXISTS {_ident(database)} WITH (FORCE)")
    await admin.execute(f"ALTER DATABASE {_ident(scratch)} RENAME TO {_ident(database)}")
    # Written last: a database without it (crash after the rename) is rebuilt next time.
    version = _VERSION_PREFIX + demo_version()
    await admin.execute(f"COMMENT ON DATABASE {_ident(database)} IS '{version}'")
    elapsed = time.perf_counter() - started
    _log.info("built demo database %s in %.2fs", database, elapsed)
    return elapsed


async def _ensure_reader_role(admin: asyncpg.Connection, password: str | None) -> None:
    role = _ident(READER_ROLE)
    if not await admin.fetchval("SELECT true FROM pg_roles WHERE rolname = $1", READER_ROLE):
        await admin.execute(f"CREATE ROLE {role} LOGIN")
    await admin.execute(
        f"ALTER ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
    )
    await admin.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")
    if password is not None:
        # Utility statements take no parameters: let the server quote the password.
        statement = await admin.fetchval(
            "SELECT format('ALTER ROLE %I PASSWORD %L', $1::text, $2::text)", READER_ROLE, password
        )
        await admin.execute(statement)


async def _grant_reader(dsn: str, database: str) -> None:
    # Applied on every ensure, not only after a build: a role dropped and recreated loses its grants.
    # The grants are the ones `nl2sql-gateway rules grants demo` prints, from the demo's rule file: the
    # reader gets SELECT on each visible column only, so Postgres refuses employees.salary on its own.
    rules = _demo_rules()
    conn = await asyncpg.connect(dsn)
    try:
        schema = await introspect_connection(conn, "demo")
        db = _ident(database)
        await conn.execute(f"REVOKE CREATE, TEMPORARY ON DATABASE {db} FROM PUBLIC")
        await conn.execute(grants_sql(schema, rules, READER_ROLE, database))
    finally:
        await conn.close()


def _demo_rules() -> RuleSet:
    """rules/demo.yaml of this checkout (or of the working directory, as the image lays it out)."""
    for folder in (Path(__file__).resolve().parents[2] / "rules", Path("rules")):
        files = rule_files(folder, "demo")
        if files:
            rules, problems = load_ruleset("demo", files)
            errors = [str(p) for p in problems if p.severity == "error"]
            if errors:
                raise ValueError(f"the demo's rule files have errors: {errors}")
            return rules
    _log.warning("no rules/demo.yaml found: the demo reader may read every column")
    return RuleSet(database="demo")


def _sql(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
