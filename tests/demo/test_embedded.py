"""The embedded server really stops and starts again, on the same data and the same DSN."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from gateway.demo.embedded import MAX_SOCKET_PATH, EmbeddedPostgres


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedPostgres]:
    data_dir = Path(tempfile.mkdtemp(prefix="nl2sqlpg-", dir="/tmp"))
    server = EmbeddedPostgres(data_dir, durable=False)
    server.start()
    yield server
    server.destroy()
    shutil.rmtree(data_dir, ignore_errors=True)


async def answer(dsn: str) -> int:
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM kept"))
    finally:
        await conn.close()


async def test_stop_really_stops_and_start_brings_the_data_back(server: EmbeddedPostgres) -> None:
    conn = await asyncpg.connect(server.admin_dsn)
    await conn.execute("CREATE TABLE IF NOT EXISTS kept AS SELECT generate_series(1, 3) AS x")
    dsn = server.admin_dsn

    server.stop()
    assert not server.is_running()
    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError)):  # the session was terminated
        await conn.fetchval("SELECT 1")
    with pytest.raises(OSError):  # and nothing accepts new ones
        await asyncpg.connect(dsn, timeout=5)
    conn.terminate()

    server.start()
    assert server.is_running()
    assert server.admin_dsn == dsn
    assert await answer(dsn) == 3


async def test_an_immediate_stop_recovers_on_start(server: EmbeddedPostgres) -> None:
    conn = await asyncpg.connect(server.admin_dsn)
    await conn.execute("CREATE TABLE IF NOT EXISTS kept AS SELECT generate_series(1, 3) AS x")
    await conn.close()
    server.stop(mode="immediate")  # like a crash: no shutdown checkpoint
    server.restart()  # stop() on a stopped server is a no-op
    assert await answer(server.admin_dsn) == 3


async def test_a_second_handle_adopts_the_running_server(server: EmbeddedPostgres) -> None:
    other = EmbeddedPostgres(server.data_dir)
    other.start()
    assert other.admin_dsn == server.admin_dsn
    assert await answer(other.admin_dsn) == 3


async def test_a_long_data_dir_gets_a_short_socket_dir_and_tcp_works() -> None:
    parent = Path(tempfile.mkdtemp(prefix="nl2sqlpg-", dir="/tmp"))
    data_dir = parent / ("long-directory-name-" * 5)
    assert len(str(data_dir)) > MAX_SOCKET_PATH
    server = EmbeddedPostgres(data_dir, tcp=True, durable=False)
    try:
        server.start()
        assert server.socket_dir != data_dir
        assert server.dsn("postgres").startswith("postgresql://postgres@127.0.0.1:")
        conn = await asyncpg.connect(server.dsn("postgres"))
        try:
            assert await conn.fetchval("SELECT inet_server_addr()::text") == "127.0.0.1/32"
        finally:
            await conn.close()
        port = server.port
        server.restart()
        assert server.port == port
        socket_conn = await asyncpg.connect(
            f"postgresql://postgres@/postgres?host={server.socket_dir}&port={server.port}"
        )
        await socket_conn.close()
    finally:
        server.destroy()
        shutil.rmtree(parent, ignore_errors=True)
    assert not server.socket_dir.exists()


def test_the_server_user_owns_the_cluster(server: EmbeddedPostgres) -> None:
    # As root, Postgres runs as an unprivileged system user; otherwise as the current user.
    owner = pwd.getpwuid(server.data_dir.stat().st_uid).pw_name
    assert owner == ("embedded_postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name)
