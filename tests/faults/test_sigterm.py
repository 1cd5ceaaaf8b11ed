"""SIGTERM drains: `nl2sql-gateway serve` as a real process finishes the requests in flight, answers them with
`Connection: close`, serves nothing new on connections left open, then exits with status 0."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from gateway.testing.scripted_llm import Reply, ScriptedLLM
from tests.backpressure.helpers import ANSWER, QUESTION
from tests.serving import start_serve

GUARD_S = 60.0  # a bound on waiting for a condition: reaching it fails the test instead of blocking it


async def until(what: str, condition: Callable[[], Awaitable[bool]]) -> None:
    """Poll ``condition`` until it holds; a bounded wait on what happened, never a guess at how long it takes."""
    try:
        async with asyncio.timeout(GUARD_S):
            while not await condition():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"{what}: not within {GUARD_S} s") from None


async def drain_began(probe: httpx.AsyncClient) -> bool:
    """Whether answers now close their connection (the probe's kept-alive one); from then on it drains."""
    return (await probe.get("/healthz")).headers.get("connection") == "close"


async def test_sigterm_lets_requests_in_flight_finish(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    # The LLM answers once the drain has begun: the questions are in flight through the signal, whatever the load.
    release = threading.Event()
    llm.add_reply(Reply(ANSWER, hold=release))
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LLM__BASE_URL": llm.base_url,
           "NL2SQL_LLM__MODEL": "scripted-model", "NL2SQL_AUTH__ENABLED": "false",
           "NL2SQL_LOGGING__JSON_LOGS": "true"}
    proc, base = await asyncio.to_thread(start_serve, env, tmp_path)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http, \
                httpx.AsyncClient(base_url=base, timeout=30) as probe:
            assert (await probe.get("/healthz")).status_code == 200  # its connection stays open
            slow = [asyncio.create_task(http.post("/v1/ask", json={"question": QUESTION, "database": "demo"}))
                    for _ in range(4)]

            async def all_asked() -> bool:
                return len(llm.requests) >= 4

            await until("every question waits on the LLM", all_asked)
            proc.send_signal(signal.SIGTERM)
            await until("the drain began", lambda: drain_began(probe))
            assert not any(task.done() for task in slow)  # all four are still in flight while it drains
            release.set()
            responses = await asyncio.gather(*slow)
        returncode = await asyncio.to_thread(proc.wait, 30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
        stderr = proc.log_text()
    assert [r.status_code for r in responses] == [200] * 4, [r.text for r in responses]
    assert all(r.json()["status"] == "ok" for r in responses)
    assert all(r.headers["connection"] == "close" for r in responses)  # answered during the drain
    assert returncode == 0, stderr
    assert "gateway_stopping" in stderr and "Application shutdown complete." in stderr
    try:
        async with httpx.AsyncClient(base_url=base, timeout=1) as http:
            await http.get("/healthz")
        listening = True
    except httpx.HTTPError:
        listening = False
    assert not listening  # the process is gone and its port closed


async def test_kept_alive_connections_are_not_served_during_the_drain(demo_dsn: str, llm: ScriptedLLM,
                                                                      tmp_path: Path) -> None:
    release = threading.Event()  # the question stays in flight until the test has seen the drain refuse
    llm.add_reply(Reply(ANSWER, hold=release))
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LLM__BASE_URL": llm.base_url,
           "NL2SQL_LLM__MODEL": "scripted-model", "NL2SQL_AUTH__ENABLED": "false"}
    proc, base = await asyncio.to_thread(start_serve, env, tmp_path)
    sql = {"database": "demo", "sql": "SELECT count(*) FROM regions"}
    try:
        async with (httpx.AsyncClient(base_url=base, timeout=30) as kept, httpx.AsyncClient(base_url=base, timeout=30)
                    as probe, httpx.AsyncClient(base_url=base, timeout=30) as asker):
            before = await kept.post("/v1/sql", json=sql)  # this connection stays open, idle
            await probe.get("/healthz")
            slow = asyncio.create_task(asker.post("/v1/ask", json={"question": QUESTION, "database": "demo"}))

            async def asked() -> bool:
                return bool(llm.requests)

            await until("the question waits on the LLM", asked)
            proc.send_signal(signal.SIGTERM)
            await until("the drain began", lambda: drain_began(probe))  # answers close their connection
            during = await kept.post("/v1/sql", json=sql)
            assert not slow.done()
            release.set()
            in_flight = await slow
        returncode = await asyncio.to_thread(proc.wait, 30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    assert before.status_code == 200 and before.headers.get("connection") != "close"
    assert during.status_code == 503 and during.json()["code"] == "shutting_down"
    assert during.headers["connection"] == "close" and during.headers["retry-after"] == "1"
    assert in_flight.status_code == 200 and in_flight.headers["connection"] == "close"
    assert returncode == 0
