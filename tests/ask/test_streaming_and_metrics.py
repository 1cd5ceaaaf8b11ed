"""Server-sent events deliver every attempt as it happens; the ask metrics appear on /metrics."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from gateway.api.app import create_app
from gateway.settings import Settings
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_reflection, post_ask, script, sql

STREAM = {"Accept": "text/event-stream"}


def parse_sse(text: str) -> list[tuple[str, Any]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[str]:
    """The app behind a real uvicorn on loopback, in this event loop (streaming is not buffered)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(create_app(settings), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


async def test_stream_delivers_every_attempt_then_the_answer(demo_dsn: str, llm: ScriptedLLM,
                                                             dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT count(*) FROM orderz"), sql("SELECT name FROM regions WHERE code = 'weu'"),
           sql("SELECT name FROM regions WHERE code = 'WEU'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        response = await http.post("/v1/ask", json={"question": "Name of region weu?", "database": "demo"},
                                   headers=STREAM)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    assert [name for name, _ in events] == ["attempt", "attempt", "attempt", "answer"]
    answer = events[-1][1]
    assert [data for _, data in events[:-1]] == answer["attempts"]
    assert answer["status"] == "ok" and answer["rows"] == [["Western Europe"]]


async def test_stream_sends_each_attempt_before_the_next_llm_call_returns(demo_dsn: str, llm: ScriptedLLM,
                                                                          dirs: dict[str, Path]) -> None:
    first_event_seen = threading.Event()
    order: list[str] = []

    def held_reflection(request: LLMRequest) -> str | None:
        if not is_reflection(request):
            return None
        # Runs in the scripted server's thread: the gateway waits here until the client has read attempt 1.
        order.append("released" if first_event_seen.wait(timeout=10) else "timed out")
        return sql("SELECT count(*) AS n FROM orders")

    script(llm, sql("SELECT count(*) FROM orderz"))
    llm.add(held_reflection, times=1)
    async with served(ask_settings(demo_dsn, dirs, llm.base_url)) as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
            body = {"question": "How many orders are there?", "database": "demo"}
            async with http.stream("POST", "/v1/ask", json=body, headers=STREAM) as response:
                buffer = ""
                names = []
                async for chunk in response.aiter_text():
                    buffer += chunk
                    while "\n\n" in buffer:
                        block, buffer = buffer.split("\n\n", 1)
                        name, data = parse_sse(block)[0]
                        names.append(name)
                        if name == "attempt" and data["n"] == 1:
                            first_event_seen.set()
    assert order == ["released"] and names == ["attempt", "attempt", "answer"]


async def test_stream_reports_a_problem_after_it_started(demo_dsn: str, llm: ScriptedLLM,
                                                         dirs: dict[str, Path]) -> None:
    llm.default = "no idea"
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=1)) as (http, _):
        response = await http.post("/v1/ask", json={"question": "How many orders?", "database": "demo"},
                                   headers=STREAM)
        problem_before_stream = await http.post("/v1/ask", json={"question": "x", "database": "nope"},
                                                headers=STREAM)
    events = parse_sse(response.text)
    assert [name for name, _ in events] == ["attempt", "attempt", "problem"]
    assert events[-1][1]["code"] == "llm_bad_output" and events[-1][1]["status"] == 502
    assert problem_before_stream.status_code == 404
    assert problem_before_stream.headers["content-type"] == "application/problem+json"


async def test_ask_metrics_appear_on_metrics(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT count(*) FROM orderz"), sql("SELECT count(*) AS n FROM orders"))
    script(llm, sql("SELECT count(*) AS n FROM regions"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        await post_ask(http, "How many orders are there?")
        await post_ask(http, "How many regions are there?")
        text = (await http.get("/metrics")).text
    for needle in (
        'nl2sql_ask_total{database="demo",status="ok"}',
        "nl2sql_attempts_per_request_count",
        'nl2sql_reflections_total{database="demo",trigger="exec_error"}',
        'nl2sql_first_pass_total{database="demo"}',
        'nl2sql_final_pass_total{database="demo"}',
        'nl2sql_first_pass_ratio{database="demo"}',
        'nl2sql_final_pass_ratio{database="demo"}',
        'nl2sql_llm_calls_total{outcome="ok",purpose="generate"}',
        'nl2sql_llm_calls_total{outcome="ok",purpose="reflect"}',
        'nl2sql_llm_seconds_count{purpose="generate"}',
        'nl2sql_llm_tokens_total{kind="prompt",purpose="generate"}',
        'nl2sql_llm_tokens_total{kind="completion",purpose="reflect"}',
    ):
        assert needle in text, needle
