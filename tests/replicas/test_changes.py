"""Changes reach every replica through the store's LISTEN/NOTIFY, with the periodic re-check as fallback.

Two open Gateways on one store stand for two replicas; a change made through one (or by the CLI's
repository functions, as a DBA would) must reach the other's caches. Each waits for the other's
notification to arrive (a condition, bounded), never for a fixed sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import asyncpg
import pytest

from gateway import errors
from gateway.auth.keys import Role, new_token
from gateway.service import Gateway
from gateway.settings import AuthSettings, DatabaseSettings, Settings, StoreSettings
from gateway.store import api_keys, guidelines
from gateway.store.changes import ChangeFeed


async def until(condition: Callable[[], bool], bound_s: float = 1.0) -> float:
    """Seconds until ``condition`` holds, polled every 5 ms; fails past ``bound_s``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not condition():
        if loop.time() - started > bound_s:
            pytest.fail(f"not within {bound_s} s")
        await asyncio.sleep(0.005)
    return loop.time() - started


@asynccontextmanager
async def replica(demo_dsn: str, store_dsn: str, **store: object) -> AsyncIterator[Gateway]:
    settings = Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)},
                        store=StoreSettings(dsn=store_dsn, **store),  # type: ignore[arg-type]
                        auth=AuthSettings(enabled=True), magic={"schedule": False})  # type: ignore[arg-type]
    async with Gateway(settings) as gateway:
        yield gateway


def feed_of(gateway: Gateway) -> ChangeFeed:
    feed = gateway.state.extras["changes"]
    assert isinstance(feed, ChangeFeed)
    return feed


async def test_a_key_revoked_through_one_replica_is_refused_by_the_other(demo_dsn: str, fresh_db: str) -> None:
    async with replica(demo_dsn, fresh_db) as a, replica(demo_dsn, fresh_db) as b:
        token = new_token()
        await api_keys.create(a.state.store.pool, key_id=token.key_id, name="bi", role=Role.CLIENT.value,
                              databases=["demo"], pg_role=None, secret_sha256=token.secret_sha256)
        assert b.state.auth is not None
        header = f"Bearer {token.token}"
        assert (await b.state.auth.authenticate(header)).key_id == token.key_id  # now cached at b (5 s TTL)
        before = feed_of(b).versions["keys"]
        assert await api_keys.revoke(a.state.store.pool, token.key_id) is not None
        await until(lambda: feed_of(b).versions["keys"] > before)
        with pytest.raises(errors.Unauthorized):
            await b.state.auth.authenticate(header)
        ready = (await b.readiness())[1]["changes"]
        assert ready == {"listening": True, "versions": feed_of(a).report()["versions"]}


async def test_a_guideline_activated_on_one_replica_is_in_force_on_the_other(demo_dsn: str, fresh_db: str) -> None:
    async with replica(demo_dsn, fresh_db) as a, replica(demo_dsn, fresh_db) as b:
        assert "KEEP-IT-SHORT" not in (await b.state.guidelines.active("demo")).text  # cached at b (2 s TTL)
        before = feed_of(b).versions["guidelines"]
        version = await guidelines.add_candidate(a.state.store.pool, text="1. KEEP-IT-SHORT", parent=None,
                                                 provenance={}, database="demo")
        await a.activate(version, force=True)
        await until(lambda: feed_of(b).versions["guidelines"] > before)
        assert "KEEP-IT-SHORT" in (await b.state.guidelines.active("demo")).text


async def test_a_lost_notification_is_made_up_by_the_recheck(demo_dsn: str, fresh_db: str) -> None:
    async with replica(demo_dsn, fresh_db, change_recheck_s=0.2) as b:
        feed = feed_of(b)
        before = feed.versions["keys"]
        # A change the feed cannot hear: its connection stops listening (as when NOTIFY is lost).
        assert feed._conn is not None
        await feed._conn.execute("UNLISTEN *")
        conn = await asyncpg.connect(fresh_db)
        try:
            await conn.execute("UPDATE store_changes SET version = version + 1 WHERE kind = 'keys'")
        finally:
            await conn.close()
        await until(lambda: feed.versions["keys"] == before + 1, bound_s=5)


async def test_a_store_without_the_changes_table_does_not_stop_the_replica(fresh_db: str) -> None:
    feed = ChangeFeed(StoreSettings(dsn=fresh_db, change_recheck_s=60), on_change=lambda kind, detail: None)
    await feed.start()  # no migrations ran on fresh_db: store_changes does not exist
    try:
        assert feed.report() == {"listening": False, "versions": {}}
    finally:
        await feed.close()
