"""A `/v1/sql` client that disconnects gets its query cancelled and its pool connection back: a real
`nl2sql-gateway serve` on loopback, a real socket closed mid-query, the server's own pg_stat_activity."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx

from tests.backpressure.helpers import ENDLESS_SQL
from tests.faults.test_postgres_outage import with_app_name
from tests.serving import start_serve

APP_NAME = "nl2sql-faults-disconnect"
ACTIVE_SQL = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'"


async def _poll(admin: asyncpg.Connection, want_active: int, limit: int = 200) -> bool:
    """Bounded polling of the server's own view (0.05 s apart): a hang fails the test instead of blocking."""
    for _ in range(limit):
        if await admin.fetchval(ACTIVE_SQL, APP_NAME) == want_active:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_client_that_disconnects_gets_its_query_cancelled_and_the_connection_returned(
        demo_dsn: str, demo_admin_dsn: str, tmp_path: Path) -> None:
    env = {
        "NL2SQL_DATABASES__DEMO__DSN": with_app_name(demo_dsn, APP_NAME),
        "NL2SQL_DATABASES__DEMO__POOL_MIN_SIZE": "1",
        "NL2SQL_DATABASES__DEMO__POOL_MAX_SIZE": "1",  # the one connection must come back for the next request
        # Far beyond the polling below: only the cancellation can end the query in time.
        "NL2SQL_DATABASES__DEMO__LIMITS__STATEMENT_TIMEOUT_MS": "120000",
        "NL2SQL_SERVER__REQUEST_TIMEOUT_S": "300",
    }
    proc, base = await asyncio.to_thread(start_serve, env, tmp_path)
    admin = await asyncpg.connect(demo_admin_dsn)
    try:
        url = urlsplit(base)
        body = json.dumps({"database": "demo", "sql": ENDLESS_SQL}).encode()
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        writer.write(b"POST /v1/sql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        running = await _poll(admin, want_active=1)
        writer.close()  # the client goes away mid-query
        await writer.wait_closed()
        cancelled = await _poll(admin, want_active=0)
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            after = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT 1 AS one"})
    finally:
        await admin.close()
        proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        except subprocess.TimeoutExpired:  # a drain held up by the query this test is about
            proc.kill()
            _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)

    assert running, "the slow query never showed up as active"
    assert cancelled, f"the query kept running after its client disconnected\n{stderr[-3000:]}"
    assert after.status_code == 200 and after.json()["rows"] == [[1]]  # the pool's only connection is back
    logged = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert [line["status"] for line in logged if line.get("event") == "request"] == [499, 200]
    assert not [line for line in logged if line["level"] == "error"]  # a client leaving is not an error
