"""Migrations: applied once, recorded, safe when replicas race, and refused when an applied file changed."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from gateway.store import migrate as migrations
from gateway.store.migrate import MigrationError, available, migrate


async def test_applies_every_migration_once_and_records_it(fresh_db: str) -> None:
    conn = await asyncpg.connect(fresh_db)
    try:
        first = await migrate(conn)
        second = await migrate(conn)
        rows = await conn.fetch("SELECT version, checksum FROM schema_migrations ORDER BY version")
        tables = {r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname='public'")}
    finally:
        await conn.close()
    assert first == [m.version for m in available()] and first[0] == 1
    assert second == []
    assert [r["checksum"] for r in rows] == [m.checksum for m in available()]
    assert {"request_audit", "corrections", "feedback", "guideline_versions", "verified_examples",
            "regeneration_runs", "magic_feedbacks"} <= tables


async def test_two_replicas_migrating_at_once_apply_each_migration_once(fresh_db: str) -> None:
    conns = [await asyncpg.connect(fresh_db) for _ in range(3)]
    try:
        results = await asyncio.gather(*(migrate(c) for c in conns))
        count = await conns[0].fetchval("SELECT count(*) FROM schema_migrations")
    finally:
        for c in conns:
            await c.close()
    assert sorted(len(r) for r in results) == [0, 0, len(available())]
    assert count == len(available())


async def test_an_applied_migration_that_changed_is_refused(fresh_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = await asyncpg.connect(fresh_db)
    try:
        await migrate(conn)
        edited = [migrations.Migration(m.version, m.name, m.sql + "\n-- edited") for m in available()]
        monkeypatch.setattr(migrations, "available", lambda: edited)
        with pytest.raises(MigrationError, match="changed after it was applied"):
            await migrate(conn)
        # The advisory lock was released on the way out: another session can take it at once.
        other = await asyncpg.connect(fresh_db)
        try:
            assert await other.fetchval("SELECT pg_try_advisory_lock($1)", migrations.MIGRATION_LOCK_KEY)
        finally:
            await other.close()
    finally:
        await conn.close()
