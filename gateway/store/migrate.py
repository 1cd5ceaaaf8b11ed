"""Versioned migrations for the store: numbered ``.sql`` files in ``gateway/store/migrations``.

Each file ``NNNN_name.sql`` runs once, in its own transaction, and is recorded in ``schema_migrations``
with a checksum. The whole pass holds a session advisory lock, so replicas that start together apply each
migration exactly once (the second waits, then finds nothing to do). A file that was edited after it was
applied is refused rather than silently ignored: ship a new numbered file instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

import asyncpg

from gateway.observability.logging import get_logger

log = get_logger(__name__)

# Arbitrary, fixed key for pg_advisory_lock: "nl2sql migrations".
MIGRATION_LOCK_KEY = 7_460_201_001

SCHEMA_MIGRATIONS_SQL = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


class MigrationError(RuntimeError):
    """The store's schema cannot be brought up to date; the message names the migration."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def available() -> list[Migration]:
    """The migrations shipped with the package, in version order."""
    found: list[Migration] = []
    for entry in resources.files("gateway.store").joinpath("migrations").iterdir():
        if not entry.name.endswith(".sql"):
            continue
        number, _, rest = entry.name.partition("_")
        if not number.isdigit():
            raise MigrationError(f"migration file {entry.name} must start with a number, e.g. 0002_name.sql")
        found.append(Migration(int(number), rest.removesuffix(".sql"), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migration files share a number: {versions}")
    return found


async def migrate(conn: asyncpg.Connection) -> list[int]:
    """Apply the pending migrations on ``conn``; return the versions applied now."""
    applied_now: list[int] = []
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
    try:
        await conn.execute(SCHEMA_MIGRATIONS_SQL)
        rows = await conn.fetch("SELECT version, checksum FROM schema_migrations")
        done = {r["version"]: r["checksum"] for r in rows}
        for migration in available():
            if migration.version in done:
                if done[migration.version] != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.version} ({migration.name}) changed after it was applied; "
                        "add a new numbered migration instead of editing an applied one"
                    )
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version, migration.name, migration.checksum,
                )
            applied_now.append(migration.version)
            log.info("store_migration_applied", version=migration.version, name=migration.name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)
    return applied_now


async def status(conn: asyncpg.Connection) -> list[tuple[int, str, bool]]:
    """(version, name, applied) for every shipped migration."""
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    done: set[int] = set()
    if exists:
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
    return [(m.version, m.name, m.version in done) for m in available()]


async def run(dsn: str, password: str | None, *, apply: bool) -> tuple[list[int], list[tuple[int, str, bool]]]:
    """One connection of its own (no pool, no Gateway: the store may still lack its tables): the versions
    applied now (none unless ``apply``) and every shipped migration's status. Any failure is a
    :class:`MigrationError` carrying the cause's text."""
    try:
        conn = await asyncpg.connect(dsn, password=password)
    except (OSError, asyncpg.PostgresError) as exc:
        raise MigrationError(str(exc)) from exc
    try:
        applied = await migrate(conn) if apply else []
        return applied, await status(conn)
    except asyncpg.PostgresError as exc:
        raise MigrationError(str(exc)) from exc
    finally:
        await conn.close()
