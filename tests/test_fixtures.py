"""The shared fixtures in conftest.py do what their docstrings promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import asyncpg

from tests.serving import LoggedProcess

if TYPE_CHECKING:
    from tests.conftest import PgServer

FRESH_NAME = re.compile(r"nl2sql_test_[0-9a-f]{12}")


async def fresh_databases(pg: PgServer) -> set[str]:
    conn = await asyncpg.connect(pg.admin_dsn)
    try:
        names = await conn.fetch("SELECT datname FROM pg_database")
    finally:
        await conn.close()
    return {row["datname"] for row in names if FRESH_NAME.fullmatch(row["datname"])}


async def test_fresh_db_is_empty_and_writable(fresh_db: str) -> None:
    conn = await asyncpg.connect(fresh_db)
    try:
        tables = "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
        assert await conn.fetchval(tables) == 0
        await conn.execute("CREATE TABLE t (x int)")
    finally:
        await conn.close()


async def test_fresh_db_is_the_only_one_alive(pg: PgServer, fresh_db: str) -> None:
    # Earlier tests' databases (the one above included, when it ran) are gone.
    assert await fresh_databases(pg) == {urlsplit(fresh_db).path.lstrip("/")}


async def test_the_demo_fixtures_point_at_one_database_with_two_roles(
    demo_dsn: str, demo_admin_dsn: str
) -> None:
    users = []
    for dsn in (demo_dsn, demo_admin_dsn):
        conn = await asyncpg.connect(dsn)
        try:
            users.append(tuple(await conn.fetchrow("SELECT current_database(), current_user")))
        finally:
            await conn.close()
    assert users[0][0] == users[1][0]
    assert users[0][1] == "nl2sql_reader" and users[1][1] != "nl2sql_reader"


def test_a_served_process_never_blocks_on_its_log(tmp_path: Path) -> None:
    # A server that logs a line per request once hung a test after ~190 requests: its stderr was a pipe
    # nobody read. The child writes far more than a pipe holds and only then exits; nothing reads meanwhile.
    script = "import sys; sys.stderr.write('x' * 1_000_000); sys.stderr.flush(); print('done')"
    proc = LoggedProcess([sys.executable, "-c", script], log=tmp_path / "child.log", stdout=subprocess.DEVNULL)
    assert proc.wait(timeout=60) == 0  # with a pipe this wait runs out: the child blocks on its write
    out, err = proc.communicate()
    assert out is None and len(err) == 1_000_000 and proc.log_text() == err
