"""The target database freezes (SIGSTOP of the postmaster and every backend: a network partition without
resets looks the same to the gateway): requests under the deadline end with a problem, while the database
is still frozen, on every transport (/v1/ask, /v1/sql, the SSE stream of /v1/ask, MCP tool calls), with
the schema snapshot stale. Then idle ``GET /mcp`` streams and the per-key cap on requests in flight.

Each request runs under a generous guard (:data:`GUARD_S`, far beyond the 2 s deadline) so that a hang
fails the test instead of blocking it; the database is resumed only after every request returned, so
"ended while frozen" is what the test checks, not a duration. The numbers (deadline + how much) are
``bench/faults.py``'s. The server is its own embedded Postgres, always resumed in a ``finally``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from gateway.api.app import create_app
from gateway.auth import Principal, Role
from gateway.demo.embedded import EmbeddedPostgres
from gateway.serving.backpressure import KeyInFlight
from gateway.settings import ContextSettings, ServerSettings
from gateway.testing.scripted_llm import ScriptedLLM
from tests.backpressure.helpers import ENDLESS_SQL, build_settings, running
from tests.mcp_server.conftest import http_client, served

DEADLINE_S = 2.0
GUARD_S = 30.0  # a request still waiting after this long is hung: the test fails
PROBLEMS = {"deadline_exceeded", "database_unavailable"}
ANSWER = "<sql>SELECT count(*) AS orders FROM orders WHERE status <> 'cancelled'</sql>"
SQL = {"database": "demo", "sql": "SELECT count(*) AS n FROM orders"}
SCHEMA = """
CREATE TABLE orders (order_id int PRIMARY KEY, status text NOT NULL, note text);
INSERT INTO orders SELECT g, (ARRAY['paid', 'shipped', 'cancelled'])[1 + g % 3], 'order ' || g
FROM generate_series(1, 1000) g;
ANALYZE orders;
"""


@pytest.fixture(scope="module")
def frozen_server() -> Iterator[EmbeddedPostgres]:
    """A Postgres of its own (freezing the session's would stall anything else using it)."""
    data_dir = Path(tempfile.mkdtemp(prefix="nl2sqlpg-frozen-", dir="/tmp"))
    server = EmbeddedPostgres(data_dir, durable=False)
    try:
        server.start()
        yield server
    finally:
        server.destroy()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
async def frozen_dsn(frozen_server: EmbeddedPostgres) -> str:
    admin = await asyncpg.connect(frozen_server.admin_dsn)
    try:
        await admin.execute("DROP DATABASE IF EXISTS frozen")
        await admin.execute("CREATE DATABASE frozen")
    finally:
        await admin.close()
    conn = await asyncpg.connect(frozen_server.dsn("frozen"))
    try:
        await conn.execute(SCHEMA)
    finally:
        await conn.close()
    return frozen_server.dsn("frozen")


def server_processes(server: EmbeddedPostgres) -> list[psutil.Process]:
    """The postmaster and every process it started (backends, checkpointer, walwriter ...)."""
    pid = int((server.data_dir / "postmaster.pid").read_text().splitlines()[0])
    postmaster = psutil.Process(pid)
    return [postmaster, *postmaster.children(recursive=True)]


@contextmanager
def frozen(server: EmbeddedPostgres) -> Iterator[None]:
    """SIGSTOP the whole server inside the block; SIGCONT whatever happens (a failing test included)."""
    processes = server_processes(server)
    try:
        for process in processes:
            os.kill(process.pid, signal.SIGSTOP)
        yield
    finally:
        for process in processes:
            try:
                os.kill(process.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


def problem_code(response: httpx.Response) -> str | None:
    if response.headers.get("content-type") != "application/problem+json":
        return None
    return str(response.json().get("code"))


async def until_answered(send: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
    """``send()`` again until it answers 200 (bounded by GUARD_S); meanwhile only the expected problems."""
    async with asyncio.timeout(GUARD_S):
        while (response := await send()).status_code != 200:
            assert problem_code(response) in PROBLEMS, response.text
            await asyncio.sleep(0.1)
    return response


async def guarded(what: str, work: Any) -> tuple[str, Any]:
    """``(what, outcome)``; the outcome is ``"hung"`` when the request outlived :data:`GUARD_S`."""
    try:
        async with asyncio.timeout(GUARD_S):
            return what, await work
    except TimeoutError:
        return what, "hung"


async def sse_last_event(http: httpx.AsyncClient) -> tuple[int, str | None, dict[str, Any] | None]:
    """(status, last event name, its data) of a streamed /v1/ask."""
    event, data = None, None
    async with http.stream("POST", "/v1/ask", json={"question": "How many orders?", "database": "demo"},
                           headers={"Accept": "text/event-stream"}) as response:
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
        return response.status_code, event, data


async def mcp_tool(url: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str | None]:
    """(is_error, problem code) of one MCP tool call."""
    async with http_client(url, None) as client:
        result = await client.call_tool(name, arguments)
    content = result.structured_content or {}
    return bool(result.is_error), content.get("code")


async def test_frozen_database_every_request_ends_with_a_problem_while_it_is_frozen(
        frozen_server: EmbeddedPostgres, frozen_dsn: str, llm: ScriptedLLM) -> None:
    llm.add_reply(ANSWER)
    settings = build_settings(frozen_dsn, llm.base_url, limits={"acquire_timeout_s": 5.0}, pool_max_size=4)
    settings = settings.model_copy(update={
        "server": ServerSettings(request_timeout_s=DEADLINE_S),
        "context": ContextSettings(stale_wait_s=0.5, refresh_timeout_s=20.0),
    })
    async with served(settings) as (base, state), httpx.AsyncClient(base_url=base, timeout=GUARD_S * 2) as http:
        # The snapshot is loaded (on a loaded machine the first question may need more than the 2 s deadline:
        # asked again until it answers, the load going on meanwhile).
        warm = await until_answered(lambda: http.post("/v1/ask", json={"question": "How many orders?",
                                                                       "database": "demo"}))
        assert warm.json()["status"] == "ok", warm.text
        await until_answered(lambda: http.post("/v1/sql", json=SQL))
        state.schemas.age_out("demo")  # stale: the next question refreshes it, on a frozen server

        with frozen(frozen_server):
            outcomes = await asyncio.gather(
                *(guarded(f"ask {i}", http.post("/v1/ask", json={"question": "How many orders?",
                                                                   "database": "demo"})) for i in range(3)),
                *(guarded(f"sql {i}", http.post("/v1/sql", json=SQL)) for i in range(3)),
                *(guarded(f"sse {i}", sse_last_event(http)) for i in range(2)),
                guarded("mcp run_sql", mcp_tool(base + "/mcp", "run_sql", SQL)),
                guarded("mcp ask", mcp_tool(base + "/mcp", "ask", {"database": "demo",
                                                                   "question": "How many orders?"})),
            )
            frozen_still = all(p.status() == psutil.STATUS_STOPPED for p in server_processes(frozen_server))
        after = await until_answered(lambda: http.post("/v1/sql", json=SQL))

    assert frozen_still  # every answer below came while the database was frozen
    for what, outcome in outcomes:
        assert outcome != "hung", f"{what} waited for the frozen database"
        if what.startswith(("ask", "sql")):
            assert outcome.status_code in {503, 504} and problem_code(outcome) in PROBLEMS, (what, outcome.text)
        elif what.startswith("sse"):
            status, event, data = outcome
            assert status == 200 and event == "problem" and data is not None, (what, outcome)
            assert data["code"] in PROBLEMS, (what, data)
        else:
            is_error, code = outcome
            assert is_error and code in PROBLEMS, (what, outcome)
    assert after.status_code == 200  # the pool recovered by itself once the database resumed


async def test_no_snapshot_and_a_frozen_database_answer_database_unavailable(
        frozen_server: EmbeddedPostgres, frozen_dsn: str, llm: ScriptedLLM) -> None:
    llm.add_reply(ANSWER)
    settings = build_settings(frozen_dsn, llm.base_url, pool_max_size=2)
    settings = settings.model_copy(update={"server": ServerSettings(request_timeout_s=DEADLINE_S)})
    async with running(settings) as (http, state):
        state.schemas.invalidate("demo")
        with frozen(frozen_server):
            what, outcome = await guarded("ask", http.post("/v1/ask", json={"question": "How many orders?",
                                                                           "database": "demo"}))
        assert outcome != "hung"
        assert (outcome.status_code, problem_code(outcome)) == (503, "database_unavailable"), outcome.text
        again = await until_answered(lambda: http.post("/v1/ask", json={"question": "How many orders?",
                                                                        "database": "demo"}))
    assert again.status_code == 200 and again.json()["status"] == "ok"  # the refresh finished after SIGCONT


async def test_idle_get_mcp_streams_hold_nothing(demo_dsn: str) -> None:
    settings = build_settings(demo_dsn, backpressure={"max_in_flight": 8})
    async with served(settings) as (base, _), httpx.AsyncClient(base_url=base, timeout=GUARD_S) as http:
        async with _open_streams(base, 16) as answers:
            ok = await asyncio.gather(*(http.post("/v1/sql", json=SQL) for _ in range(4)))
    assert [r.status_code for r in ok] == [200] * 4
    assert {(r.status_code, problem_code(r), r.headers.get("allow")) for r in answers} == {
        (405, "method_not_allowed", "POST, DELETE")}


async def _get_mcp(client: httpx.AsyncClient, opened: list[httpx.Response]) -> httpx.Response:
    # Sent as an SSE client sends it, and left open: such a client keeps the socket until the server ends it.
    response = await client.send(client.build_request("GET", "/mcp", headers={"Accept": "text/event-stream"}),
                                 stream=True)
    opened.append(response)
    await response.aread()
    return response


@asynccontextmanager
async def _open_streams(base: str, n: int) -> AsyncIterator[list[httpx.Response]]:
    clients = [httpx.AsyncClient(base_url=base, timeout=GUARD_S) for _ in range(n)]
    opened: list[Any] = []
    try:
        answers = await asyncio.gather(*(_get_mcp(c, opened) for c in clients))
        yield list(answers)
    finally:
        for response in opened:
            await response.aclose()
        for client in clients:
            await client.aclose()


async def test_one_key_cannot_take_every_slot(demo_dsn: str) -> None:
    settings = build_settings(demo_dsn, limits={"statement_timeout_ms": 60_000},
                              backpressure={"max_in_flight": 4, "max_in_flight_per_key": 2})
    settings = settings.model_copy(update={"server": ServerSettings(request_timeout_s=DEADLINE_S * 2)})
    app = create_app(settings)

    def client_at(address: str) -> httpx.AsyncClient:  # auth is off: the address is the key
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(address, 1000)),
                                 base_url="http://localhost", timeout=GUARD_S)

    async with app.router.lifespan_context(app), client_at("10.0.0.1") as greedy, client_at("10.0.0.2") as other:
        target = app.state.gateway.target("demo")
        slow = [asyncio.create_task(greedy.post("/v1/sql", json={"database": "demo", "sql": ENDLESS_SQL}))
                for _ in range(2)]
        async with asyncio.timeout(GUARD_S):
            while target.pool_stats()[1] < 2:  # both slow queries hold a connection: they are in flight
                await asyncio.sleep(0.01)
        third = await greedy.post("/v1/sql", json=SQL)
        others = await asyncio.gather(*(other.post("/v1/sql", json=SQL) for _ in range(2)))
        slow_done = await asyncio.gather(*slow)
    assert (third.status_code, problem_code(third)) == (429, "too_many_in_flight"), third.text
    assert [r.status_code for r in others] == [200, 200]  # another key still gets the slots left
    assert {problem_code(r) for r in slow_done} == {"deadline_exceeded"}


def test_the_per_key_count_follows_the_owner_not_the_address() -> None:
    key = Principal(name="k", role=Role.CLIENT, databases=frozenset({"*"}), key_id="abc")
    user = Principal(name="k", role=Role.CLIENT, databases=frozenset({"*"}), key_id="abc", user="u1")
    anonymous = Principal(name="anonymous", role=Role.ADMIN, databases=frozenset({"*"}))
    at = {"client": ("10.0.0.9", 5)}
    assert KeyInFlight.key_of({**at, "state": {"principal": key}}) == "key:abc"
    assert KeyInFlight.key_of({**at, "state": {"principal": user}}) == "user:u1"  # the end user, across keys
    assert KeyInFlight.key_of({**at, "state": {"principal": anonymous}}) == "addr:10.0.0.9"
    assert KeyInFlight.key_of({**at, "state": {}}) == "addr:10.0.0.9"
    cap = KeyInFlight(2)
    assert cap.enter("key:abc") and cap.enter("key:abc") and not cap.enter("key:abc")
    assert cap.enter("key:other")
    cap.leave("key:abc")
    assert cap.enter("key:abc")
    cap.leave("key:abc"), cap.leave("key:abc"), cap.leave("key:other")
    assert cap.counts == {}  # nothing kept for keys with nothing in flight
