"""Read replicas: a streaming standby of the test server made with the embedded binaries (pg_basebackup -R).

Client queries go to a healthy replica, fall back to the primary when it is down or lags beyond
``replica_max_lag_s``, and a query the standby cancels for a recovery conflict runs once more on the primary.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import asyncpg
import pytest

from gateway.demo.embedded import EmbeddedPostgres
from gateway.execute import Targets
from gateway.execute.run import run_query
from gateway.observability import metrics
from gateway.settings import DatabaseSettings, Settings
from tests.conftest import PgServer

DATABASE = "nl2sql_standby_test"


@pytest.fixture(scope="module")
async def primary_dsn(pg: PgServer) -> AsyncIterator[str]:
    admin = await asyncpg.connect(pg.admin_dsn)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(pg.dsn(DATABASE))
    try:
        await conn.execute("CREATE TABLE t AS SELECT g AS x FROM generate_series(1, 100) g")
    finally:
        await conn.close()
    yield pg.dsn(DATABASE)
    admin = await asyncpg.connect(pg.admin_dsn)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture(scope="module")
def standby(pg: PgServer, primary_dsn: str) -> Iterator[EmbeddedPostgres]:
    if pg.embedded is None:
        pytest.skip("makes a standby of the embedded server, not of NL2SQL_TEST_ADMIN_DSN")
    parent = Path(tempfile.mkdtemp(prefix="nl2sqlpg-"))
    # No delay before a conflicting replay cancels a standby query: the conflict test needs it at once.
    server = pg.embedded.standby(parent / "standby", max_standby_streaming_delay="0")
    try:
        yield server
    finally:
        server.destroy()
        shutil.rmtree(parent, ignore_errors=True)


def settings(primary: str, standby: EmbeddedPostgres | None, **extra: object) -> Settings:
    replica = standby.dsn(DATABASE) if standby is not None else "postgresql://nobody@127.0.0.1:1/none"
    return Settings(databases={"db": DatabaseSettings(dsn=primary, replica_dsns=[replica], **extra)})  # type: ignore[arg-type]


async def until(condition: Callable[[], bool], bound_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not condition():
        if loop.time() - started > bound_s:
            pytest.fail(f"not within {bound_s} s")
        await asyncio.sleep(0.02)


async def test_queries_go_to_the_replica_and_fall_back_when_it_does_not_answer(
        primary_dsn: str, standby: EmbeddedPostgres) -> None:
    targets = await Targets.open(settings(primary_dsn, standby))
    try:
        target = targets.by_name["db"]
        result = await run_query(target, "SELECT pg_is_in_recovery(), count(*) FROM t")
        assert result.source == "replica1" and result.rows == [[True, 100]]
    finally:
        await targets.close()
    targets = await Targets.open(settings(primary_dsn, None))  # a replica nothing listens for
    try:
        target = targets.by_name["db"]
        assert target.replicas[0].healthy is False
        result = await run_query(target, "SELECT pg_is_in_recovery()")
        assert result.source == "primary" and result.rows == [[False]]
    finally:
        await targets.close()


async def test_a_lagging_replica_is_skipped_until_it_catches_up(primary_dsn: str, standby: EmbeddedPostgres) -> None:
    targets = await Targets.open(settings(primary_dsn, standby, replica_max_lag_s=0.3, replica_check_s=0.1))
    admin = await asyncpg.connect(standby.dsn(DATABASE))
    writer = await asyncpg.connect(primary_dsn)
    try:
        target = targets.by_name["db"]
        assert target.replicas[0].healthy
        await admin.execute("SELECT pg_wal_replay_pause()")
        await writer.execute("INSERT INTO t VALUES (101); DELETE FROM t WHERE x = 101")  # WAL it cannot replay
        await until(lambda: not target.replicas[0].healthy)
        assert target.replicas[0].lag_s is not None and target.replicas[0].lag_s > 0.3
        assert 'nl2sql_replica_lag_seconds{database="db",replica="replica1"}' in metrics.exposition()[0].decode()
        result = await run_query(target, "SELECT pg_is_in_recovery()")
        assert result.source == "primary" and result.rows == [[False]]
        await admin.execute("SELECT pg_wal_replay_resume()")
        await until(lambda: target.replicas[0].healthy)
        assert (await run_query(target, "SELECT pg_is_in_recovery()")).source == "replica1"
    finally:
        await admin.execute("SELECT pg_wal_replay_resume()")
        await admin.close()
        await writer.close()
        await targets.close()


async def test_a_query_cancelled_by_a_recovery_conflict_runs_again_on_the_primary(
        primary_dsn: str, standby: EmbeddedPostgres) -> None:
    targets = await Targets.open(settings(primary_dsn, standby, replica_check_s=60))
    observer = await asyncpg.connect(standby.dsn(DATABASE))
    writer = await asyncpg.connect(primary_dsn)
    retried = metrics.REPLICA_QUERIES.labels("db", "replica1", "retried")
    before = retried._value.get()
    try:
        target = targets.by_name["db"]
        task = asyncio.create_task(run_query(target, "SELECT pg_sleep(1.5)::text, count(*) FROM t"))
        query = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(1.5)%' " \
                "AND pid <> pg_backend_pid()"
        for _ in range(250):
            if await observer.fetchval(query):
                break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("the query never started on the standby")
        # The lock is WAL-logged; replaying it conflicts with the standby query's lock on t and cancels it.
        async with writer.transaction():
            await writer.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        result = await task
        assert result.source == "primary" and result.rows == [["", 100]]
        assert retried._value.get() - before == 1
    finally:
        await observer.close()
        await writer.close()
        await targets.close()


async def test_a_replica_lost_mid_way_sends_the_query_to_the_primary(primary_dsn: str,
                                                                     standby: EmbeddedPostgres) -> None:
    targets = await Targets.open(settings(primary_dsn, standby, replica_check_s=60))
    try:
        target = targets.by_name["db"]
        assert (await run_query(target, "SELECT 1")).source == "replica1"
        standby.stop("immediate")
        try:
            result = await run_query(target, "SELECT pg_is_in_recovery()")
            assert result.source == "primary" and result.rows == [[False]]
            assert target.replicas[0].healthy is False  # no more queries there until a check finds it back
        finally:
            standby.start()
    finally:
        await targets.close()
