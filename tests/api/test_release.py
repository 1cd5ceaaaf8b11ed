"""A query's connection goes back to the pool through asyncpg's own return, without ``Pool.release``'s
shield task and timer, only when nothing in that return can wait (gateway.execute.run._release_now); any
connection that still needs asyncpg's care goes through ``Pool.release`` as before."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest

from gateway import errors
from gateway.api.app import create_app
from gateway.execute import run_query, statements
from gateway.execute.run import _release_now
from tests.api.conftest import demo_settings
from tests.api.test_bounds import gateway

QUERY = "SELECT region_id, name FROM regions ORDER BY region_id"


def _count_pool_releases(monkeypatch: pytest.MonkeyPatch, pool: asyncpg.Pool) -> list[Any]:
    calls: list[Any] = []
    release: Callable[..., Any] = asyncpg.Pool.release

    async def counted(self: asyncpg.Pool, connection: Any, *, timeout: float | None = None) -> None:
        if self is pool:
            calls.append(connection)
        await release(self, connection, timeout=timeout)

    monkeypatch.setattr(asyncpg.Pool, "release", counted)
    return calls


@contextlib.asynccontextmanager
async def one_connection(demo_dsn: str) -> AsyncIterator[Any]:
    settings = demo_settings(demo_dsn)
    demo = settings.databases["demo"].model_copy(update={"pool_min_size": 1, "pool_max_size": 1})
    app = create_app(settings.model_copy(update={"databases": {"demo": demo}}))
    async with app.router.lifespan_context(app):
        yield app.state.gateway


def _idle(pool: asyncpg.Pool) -> list[Any]:
    return [h for h in pool._holders if h._in_use is None and h._con is not None]


async def test_a_finished_query_returns_its_connection_without_pool_release(demo_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with gateway(demo_dsn) as (_, state):
        target = state.target("demo")
        expected = (await run_query(target, QUERY)).rows
        calls = _count_pool_releases(monkeypatch, target.pool)
        for _ in range(20):
            assert (await run_query(target, QUERY, principal="key-a")).rows == expected
        assert calls == []
        # Back in the pool as asyncpg's return leaves it: free, reset, its idle timer armed.
        idle = _idle(target.pool)
        assert idle and len(idle) == target.pool.get_size()
        assert all(h._inactive_callback is not None for h in idle)
        assert all(not h._con._protocol.is_in_transaction() for h in idle)


async def test_a_failed_query_returns_its_connection_the_same_way(demo_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with gateway(demo_dsn) as (_, state):
        target = state.target("demo")
        calls = _count_pool_releases(monkeypatch, target.pool)
        with pytest.raises(errors.QueryError):
            await run_query(target, "SELECT 1 / (region_id - region_id) FROM regions")
        assert calls == []
        assert (await run_query(target, "SELECT 1")).rows == [[1]]
        assert all(not h._con._protocol.is_in_transaction() for h in _idle(target.pool))


async def test_a_connection_lost_mid_query_goes_through_pool_release(demo_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend is terminated under the query: the connection is closed, so asyncpg's pool must see to
    it (Pool.release), and the next query gets a working connection."""
    async with one_connection(demo_dsn) as state:
        target = state.target("demo")
        await run_query(target, "SELECT 1")
        calls = _count_pool_releases(monkeypatch, target.pool)
        with pytest.raises(errors.DatabaseUnavailable):
            # Twice the same death (the retry gets a fresh connection and is killed too).
            await run_query(target, "SELECT pg_terminate_backend(pg_backend_pid())")
        assert len(calls) == 2
        assert (await run_query(target, "SELECT 1")).rows == [[1]]


async def test_a_connection_whose_reset_did_not_run_goes_through_pool_release(demo_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the run path's reset (its round trip did not complete) the pool's reset must run: the quick
    return is not taken, and the full reset leaves nobody's statements on the connection."""
    async with one_connection(demo_dsn) as state:
        target = state.target("demo")
        await run_query(target, QUERY, principal="key-a")
        conn = await target.pool.acquire()
        session = statements.session_of(conn)
        assert session.statements and not session.reset_done
        calls = _count_pool_releases(monkeypatch, target.pool)
        assert await _release_now(conn, target.pool) is False
        await target.pool.release(conn)
        assert len(calls) == 1
        assert not session.statements and session.partition is None and not session.unsure
        assert (await run_query(target, QUERY, principal="key-a")).rows  # prepared again, under a new name
