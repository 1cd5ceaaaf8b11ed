"""Slow and keyless clients against `nl2sql-gateway serve` as a real process: admission order.

With ``max_in_flight = 4``, clients that send their headers (or their body) one byte at a time and clients
with no API key must not keep an authenticated client out: the key is checked and the body read before a
request takes a slot, and both the headers and the body have a deadline (408 ``request_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from gateway.auth import new_token
from gateway.store import api_keys
from tests.serving import start_serve

SQL = {"database": "demo", "sql": "SELECT count(*) FROM regions"}
DRIP_EVERY_S = 0.5


@pytest.fixture
async def served(demo_dsn: str, fresh_db: str, tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    """A server with auth on, 4 slots and 15 s to send headers or body; yields its URL and a valid token.

    15 s: long enough that the valid key's requests surely end while the drippers still hold their sockets,
    even on a loaded machine; short enough to cut every dripper (each drips for at least 25 s).
    """
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_STORE__DSN": fresh_db,
           "NL2SQL_AUTH__ENABLED": "true", "NL2SQL_MAGIC__SCHEDULE": "false",
           "NL2SQL_BACKPRESSURE__MAX_IN_FLIGHT": "4", "NL2SQL_SERVER__HEADER_TIMEOUT_S": "15",
           "NL2SQL_SERVER__BODY_TIMEOUT_S": "15", "NL2SQL_LOGGING__JSON_LOGS": "true"}
    proc, base = await asyncio.to_thread(start_serve, env, tmp_path)
    try:
        token = new_token()
        conn = await asyncpg.connect(fresh_db)  # migrated by the server at start-up
        try:
            await api_keys.create(conn, key_id=token.key_id, name="valid", role="client", databases=["*"],
                                  pg_role=None, secret_sha256=token.secret_sha256)
        finally:
            await conn.close()
        yield base, token.token
    finally:
        proc.kill()
        proc.communicate(timeout=30)


class Dripper:
    """A raw socket that sends a request a few bytes at a time and keeps what the server answers."""

    def __init__(self, base: str, head: bytes, body: bytes) -> None:
        self.port = int(base.rsplit(":", 1)[1])
        self.head, self.body = head, body
        self.answer = b""
        self.closed = False
        self.sent = 0  # bytes written so far

    async def run(self, *, drip_headers: bool, max_drips: int = 60) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        reading = asyncio.create_task(reader.read(65536))
        try:
            if drip_headers:
                pending = self.head + self.body
            else:
                writer.write(self.head)
                pending = self.body
            for i in range(min(len(pending), max_drips)):
                if reading.done():
                    break
                with contextlib.suppress(ConnectionError):
                    writer.write(pending[i:i + 1])
                    await writer.drain()
                    self.sent += 1
                await asyncio.wait({reading}, timeout=DRIP_EVERY_S)
            first = await asyncio.wait_for(reading, timeout=10)
            try:
                rest = await asyncio.wait_for(reader.read(), timeout=10)  # read() ends at EOF
            except ConnectionResetError:
                # The server closed after its answer while a byte of ours was still on the way: the kernel
                # answers that byte with a reset. The answer itself was already read.
                rest = b""
            self.answer = first + rest
            self.closed = True  # the server closed the connection after its answer
        finally:
            reading.cancel()
            writer.close()

    @property
    def status(self) -> int | None:
        line = self.answer.split(b"\r\n", 1)[0].split()
        return int(line[1]) if len(line) > 1 else None

    @property
    def code(self) -> str | None:
        _, _, body = self.answer.partition(b"\r\n\r\n")
        return json.loads(body).get("code") if body else None


def request_head(body: bytes, authorization: str | None) -> bytes:
    lines = ["POST /v1/sql HTTP/1.1", "Host: localhost", "Content-Type: application/json",
             f"Content-Length: {len(body)}"]
    if authorization:
        lines.append(f"Authorization: {authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_slow_and_keyless_clients_do_not_lock_out_a_valid_key(served: tuple[str, str]) -> None:
    base, token = served
    body = json.dumps(SQL).encode()
    drippers = {
        # The repro: headers sent, then the body one byte at a time, with no key ...
        "keyless_body": [Dripper(base, request_head(body, None), body) for _ in range(4)],
        # ... with a valid key (the worst case: only the body deadline stops these) ...
        "keyed_body": [Dripper(base, request_head(body, f"Bearer {token}"), body) for _ in range(4)],
        # ... and the headers themselves one byte at a time.
        "slow_headers": [Dripper(base, request_head(body, f"Bearer {token}"), body) for _ in range(4)],
    }
    tasks = [asyncio.create_task(d.run(drip_headers=kind == "slow_headers"))
             for kind, group in drippers.items() for d in group]
    served_statuses = []
    async with httpx.AsyncClient(base_url=base, timeout=10,
                                 headers={"Authorization": f"Bearer {token}"}) as http:
        every = [d for group in drippers.values() for d in group]
        async with asyncio.timeout(60):  # every dripper is connected and sending (a bounded wait)
            while not all(d.sent for d in every):
                await asyncio.sleep(0.01)
        for _ in range(5):
            served_statuses.append((await http.post("/v1/sql", json=SQL)).status_code)
            await asyncio.sleep(0.1)
        # The drippers are still holding their sockets while the valid key was being served.
        still_dripping = sum(not t.done() for t in tasks)
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)

    assert served_statuses == [200] * 5
    assert still_dripping >= 8  # the body and header drippers (the keyless ones are refused at once)
    for d in drippers["keyless_body"]:
        assert (d.status, d.code) == (401, "unauthorized") and d.closed
    for d in drippers["keyed_body"] + drippers["slow_headers"]:
        assert (d.status, d.code) == (408, "request_timeout") and d.closed


async def test_headers_beyond_the_bound_answer_431(served: tuple[str, str]) -> None:
    base, token = served
    port = int(base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        # 70 KB of headers, never finished, against a 64 KB bound (sent at once: the server reads it all
        # before it answers, so no reset races the answer)
        writer.write(b"GET /v1/databases HTTP/1.1\r\nHost: localhost\r\n" + b"X-Padding: " + b"a" * 70_000 + b"\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["code"] == "headers_too_large"


async def test_keyless_requests_spend_a_budget_per_address_not_the_valid_keys(served: tuple[str, str]) -> None:
    base, token = served
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        good = {"Authorization": f"Bearer {token}"}
        assert (await http.post("/v1/sql", json=SQL, headers=good)).status_code == 200  # now a known key
        bad = {"Authorization": "Bearer nl2sql_0123456789ab_" + "0" * 64}
        refused = [(await http.post("/v1/sql", json=SQL, headers=bad)) for _ in range(30)]
        assert (await http.post("/v1/sql", json=SQL, headers=good)).status_code == 200
    statuses = [r.status_code for r in refused]
    assert statuses[0] == 401 and 429 in statuses  # burst 20 by default, then a sustained 1/s
    limited = next(r for r in refused if r.status_code == 429)
    assert limited.json()["code"] == "too_many_requests" and int(limited.headers["retry-after"]) >= 1
