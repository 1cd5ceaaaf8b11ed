"""The run path behind PgBouncer in transaction mode (Debian's pgbouncer, started by the ``pgbouncer`` fixture).

In transaction mode each transaction may run on another server connection, and another client's
transactions run on this one in between: nothing may be kept on a session across requests (named
prepared statements above all), and what a request sets (SET LOCAL of timeouts, role, row-policy values)
must stay within its transaction. The whole /v1/sql and /v1/ask modules run once more through PgBouncer in
CI (``NL2SQL_TEST_PGBOUNCER=1``); these tests cover what those modules cannot see.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from gateway import errors
from gateway.execute import Targets, statements
from gateway.execute.run import run_query
from gateway.settings import DatabaseSettings, Limits, Settings
from gateway.testing.pgbouncer import PgBouncer
from tests.conftest import TEST_DEMO_DATABASE


def through(bouncer: PgBouncer, **extra: object) -> Settings:
    return Settings(databases={"demo": DatabaseSettings(
        dsn=bouncer.dsn(TEST_DEMO_DATABASE, "nl2sql_reader"), **extra)})  # type: ignore[arg-type]


async def test_a_pooled_connection_is_recognised_and_keeps_no_named_statement(
        pgbouncer: PgBouncer, demo_dsn: str) -> None:
    targets = await Targets.open(through(pgbouncer, pool_min_size=2, pool_max_size=4))
    try:
        target = targets.by_name["demo"]
        # Several gateway connections, one principal, texts that differ: with statements kept by name, one
        # connection's nl2sql_1 would be found (or refused as existing) on a server connection another
        # gateway connection prepared its own nl2sql_1 on.
        texts = [f"SELECT {n} AS n, count(*) >= 0 AS ok FROM regions" for n in range(12)]
        for _ in range(3):
            results = await asyncio.gather(*(run_query(target, t, principal="key:a") for t in texts))
            assert [r.rows[0][0] for r in results] == list(range(12))
        async with target.pool.acquire() as conn:
            assert statements.session_of(conn).pooled is True
            assert statements.session_of(conn).statements == {}
    finally:
        await targets.close()


async def test_a_direct_connection_still_keeps_its_statements(demo_dsn: str) -> None:
    targets = await Targets.open(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn, pool_max_size=1)}))
    try:
        target = targets.by_name["demo"]
        await run_query(target, "SELECT 1 AS one", principal="key:a")
        async with target.pool.acquire() as conn:
            session = statements.session_of(conn)
            assert session.pooled is False and list(session.statements) == ["SELECT 1 AS one"]
    finally:
        await targets.close()


async def test_set_local_stays_in_the_transaction_behind_the_pooler(pgbouncer: PgBouncer, demo_dsn: str) -> None:
    settings = through(pgbouncer, pool_max_size=2, limits=Limits(statement_timeout_ms=321))
    targets = await Targets.open(settings)
    try:
        target = targets.by_name["demo"]
        inside = await run_query(target, "SELECT current_setting('statement_timeout'), "
                                 "current_setting('transaction_read_only')")
        assert inside.rows == [["321ms", "on"]]
        # Straight through PgBouncer, outside the gateway's transactions: the server connections are clean.
        conn = await asyncpg.connect(pgbouncer.dsn(TEST_DEMO_DATABASE, "nl2sql_reader"), statement_cache_size=0)
        try:
            for _ in range(5):
                assert await conn.fetchval("SELECT current_setting('statement_timeout')") != "321ms"
        finally:
            await conn.close()
    finally:
        await targets.close()


async def test_a_cancelled_query_is_cancelled_on_the_server_through_the_pooler(
        pgbouncer: PgBouncer, demo_admin_dsn: str) -> None:
    targets = await Targets.open(through(pgbouncer, pool_max_size=1))
    try:
        target = targets.by_name["demo"]
        task = asyncio.create_task(run_query(target, "SELECT pg_sleep(30), 'cancel-me-through-bouncer'"))
        admin = await asyncpg.connect(demo_admin_dsn)
        try:
            query = ("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                     "AND query LIKE '%cancel-me-through-bouncer%' AND pid <> pg_backend_pid()")
            for _ in range(200):
                if await admin.fetchval(query):
                    break
                await asyncio.sleep(0.05)
            else:
                pytest.fail("the query never started")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for _ in range(200):  # the server ended it: asyncpg's cancel request reached it via PgBouncer
                if not await admin.fetchval(query):
                    break
                await asyncio.sleep(0.05)
            else:
                pytest.fail("the query still runs on the server")
        finally:
            await admin.close()
        # The pool's one connection works again.
        assert (await run_query(target, "SELECT 2")).rows == [[2]]
    finally:
        await targets.close()


async def test_a_timeout_behind_the_pooler_is_the_usual_problem(pgbouncer: PgBouncer, demo_dsn: str) -> None:
    targets = await Targets.open(through(pgbouncer, pool_max_size=1, limits=Limits(statement_timeout_ms=200)))
    try:
        with pytest.raises(errors.StatementTimeout):
            await run_query(targets.by_name["demo"], "SELECT pg_sleep(2)")
        assert (await run_query(targets.by_name["demo"], "SELECT 3")).rows == [[3]]
    finally:
        await targets.close()
