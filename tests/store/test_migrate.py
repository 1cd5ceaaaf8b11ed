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


async def test_the_review_migration_keeps_dba_examples_usable_and_puts_the_rest_up_for_review(fresh_db: str) -> None:
    """A store from before review (migrations 1-2 applied): DBA pairs and corrections count as approved and
    reviewed, feedback pairs wait in the review queue, user corrections are unreviewed."""
    conn = await asyncpg.connect(fresh_db)
    try:
        await conn.execute(migrations.SCHEMA_MIGRATIONS_SQL)
        for m in available():
            if m.version < 3:
                await conn.execute(m.sql)
                await conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                                   m.version, m.name, m.checksum)
        await conn.execute("""
            INSERT INTO verified_examples (database, question, question_key, sql, source) VALUES
                ('demo', 'q1', 'q1', 'SELECT 1', 'dba'), ('demo', 'q2', 'q2', 'SELECT 2', 'feedback'),
                ('demo', 'q3', 'q3', 'SELECT 3', 'correction');
            INSERT INTO corrections (database, question, incorrect_sql, corrected_sql, source, verified) VALUES
                ('demo', 'q1', 'SELECT 0', 'SELECT 1', 'dba', true), ('demo', 'q2', 'SELECT 0', 'SELECT 2', 'user', true),
                ('demo', 'q3', 'SELECT 0', 'SELECT 3', 'reflection', true);
        """)
        applied = await migrate(conn)
        statuses = [r["status"] for r in await conn.fetch("SELECT status FROM verified_examples ORDER BY id")]
        reviewed = [r["reviewed_at"] is not None for r in await conn.fetch("SELECT reviewed_at FROM corrections "
                                                                           "ORDER BY id")]
    finally:
        await conn.close()
    assert 3 in applied
    assert statuses == ["approved", "proposed", "proposed"]
    assert reviewed == [True, False, False]


async def test_the_owners_migration_keeps_old_rows_readable_and_unowned(fresh_db: str) -> None:
    """A store from before owners were recorded: its audit rows, feedback and conversations stay readable,
    with no owner, so feedback can no longer name those answers (gateway.store.audit.get_owned)."""
    from gateway.store import audit

    owners = next(m for m in available() if m.name == "owners")
    conn = await asyncpg.connect(fresh_db)
    try:
        await conn.execute(migrations.SCHEMA_MIGRATIONS_SQL)
        for m in available():
            if m.version < owners.version:
                await conn.execute(m.sql)
                await conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                                   m.version, m.name, m.checksum)
        await conn.execute("""
            INSERT INTO request_audit (request_id, database, question, status) VALUES ('old', 'demo', 'q', 'ok');
            INSERT INTO feedback (request_id, client_id, verdict) VALUES ('old', 'key:0123456789ab', 'correct');
            INSERT INTO conversations (id, owner, database) VALUES ('c_old', 'key:0123456789ab', 'demo');
        """)
        applied = await migrate(conn)
        await conn.set_type_codec("jsonb", schema="pg_catalog", encoder=str, decoder=str)
        old = await audit.get(conn, "old")
        claimed = [await audit.get_owned(conn, "old", who) for who in ("key:0123456789ab", "anonymous", "")]
        feedback = await conn.fetchrow("SELECT client_id, end_user, via FROM feedback")
        conversation = await conn.fetchrow("SELECT owner, end_user, via FROM conversations")
        usage = await conn.fetchval("SELECT count(*) FROM token_usage")
    finally:
        await conn.close()
    assert owners.version in applied
    assert old is not None and old.question == "q" and (old.owner, old.end_user, old.via) == (None, None, None)
    assert claimed == [None, None, None]
    assert tuple(feedback) == ("key:0123456789ab", None, None)
    assert tuple(conversation) == ("key:0123456789ab", None, None)
    assert usage == 0
