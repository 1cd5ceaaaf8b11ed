"""SIGTERM drains: `nl2sql-gateway serve` as a real process finishes the requests in flight, answers them with
`Connection: close`, serves nothing new on connections left open, then exits with status 0."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx

from gateway.testing.scripted_llm import Reply, ScriptedLLM
from tests.backpressure.helpers import ANSWER, QUESTION
from tests.serving import start_serve


async def test_sigterm_lets_requests_in_flight_finish(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.add_reply(Reply(ANSWER, delay_s=2.0))
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LLM__BASE_URL": llm.base_url,
           "NL2SQL_LLM__MODEL": "scripted-model", "NL2SQL_AUTH__ENABLED": "false",
           "NL2SQL_LOGGING__JSON_LOGS": "true"}
    proc, base = await asyncio.to_thread(start_serve, env, tmp_path)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            slow = [asyncio.create_task(http.post("/v1/ask", json={"question": QUESTION, "database": "demo"}))
                    for _ in range(4)]
            for _ in range(300):  # every question is now waiting on the (2 s) LLM
                if len(llm.requests) >= 4:
                    break
                await asyncio.sleep(0.01)
            assert len(llm.requests) == 4
            proc.send_signal(signal.SIGTERM)
            responses = await asyncio.gather(*slow)
        returncode = await asyncio.to_thread(proc.wait, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
        stderr = proc.stderr.read() if proc.stderr else ""
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
    llm.add_reply(Reply(ANSWER, delay_s=3.0))
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
            for _ in range(300):
                if llm.requests:
                    break
                await asyncio.sleep(0.01)
            proc.send_signal(signal.SIGTERM)
            for _ in range(300):  # the drain has begun once answers close their connection
                if (await probe.get("/healthz")).headers.get("connection") == "close":
                    break
                await asyncio.sleep(0.01)
            during = await kept.post("/v1/sql", json=sql)
            in_flight = await slow
        returncode = await asyncio.to_thread(proc.wait, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert before.status_code == 200 and before.headers.get("connection") != "close"
    assert during.status_code == 503 and during.json()["code"] == "shutting_down"
    assert during.headers["connection"] == "close" and during.headers["retry-after"] == "1"
    assert in_flight.status_code == 200 and in_flight.headers["connection"] == "close"
    assert returncode == 0
