"""Each fast path of gateway.serving turns itself off when the framework internal it mirrors is missing (an
upgrade moved it), says so in one warning, and requests then take the framework's own path with the same answers.

The internals are really removed (monkeypatch deletes or replaces them), then the checks in
gateway.serving.compat run again.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import fastapi.routing
import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from structlog.testing import capture_logs

from bench.floor_app import with_floor
from gateway.api.app import create_app
from gateway.serving import compat
from gateway.serving.fastpath import FastRoutes
from gateway.settings import ServerSettings, Settings
from tests.api.conftest import demo_settings
from tests.api.test_fastpath import SQL, _answer, _body

JSON = {"content-type": "application/json", "x-request-id": "fallback-test"}
REQUESTS = [
    ("/v1/sql", _body(database="demo", sql=SQL)),
    ("/v1/sql", _body(database="demo", sql=SQL, max_rows=2)),
    ("/v1/sql", _body(database="demo", sql="DELETE FROM categories")),
    ("/v1/sql", _body(database="nope", sql=SQL)),
    ("/v1/sql", b'{"database": "demo", "sql": '),
    ("/bench/floor", _body(database="demo", sql="x")),
]


@pytest.fixture
def fresh_checks() -> Iterator[None]:
    """compat's checks run again under the test's (patched) framework, and again after it."""
    for check in (compat.fastpath_missing, compat.telemetry_switch_missing, compat.protocol_missing):
        check.cache_clear()
    yield
    for check in (compat.fastpath_missing, compat.telemetry_switch_missing, compat.protocol_missing):
        check.cache_clear()


async def _answers(app: FastAPI) -> list[Any]:
    """Every request twice (the first teaches the compiled path its route), the second answers kept."""
    answers = []
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            for path, content in REQUESTS:
                for _ in range(2):
                    response = await http.post(path, content=content, headers=JSON)
                answers.append(_answer(response))
    return answers


def _app(demo_dsn: str) -> FastAPI:
    settings = demo_settings(demo_dsn, max_rows=500)
    settings.server = ServerSettings(max_body_bytes=4096)
    return with_floor(create_app(settings))


async def test_with_another_fastapi_rendering_the_compiled_path_is_off_and_answers_the_same(
        demo_dsn: str, fresh_checks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    normal = _app(demo_dsn)
    expected = await _answers(normal)
    fast: FastRoutes = normal.state.fast_routes
    assert fast.supported and fast.served >= 4  # the valid requests took the compiled path

    # A FastAPI whose rendering takes other parameters (FastAPI's own path still renders through it).
    original = fastapi.routing.serialize_response

    async def serialize_response(**kwargs: Any) -> Any:
        return await original(**kwargs)

    monkeypatch.setattr(fastapi.routing, "serialize_response", serialize_response)
    compat.fastpath_missing.cache_clear()
    with capture_logs() as logs:
        degraded = _app(demo_dsn)
        answers = await _answers(degraded)
        _app(demo_dsn)  # a second app: the check is not repeated, nor its warning
    fallback: FastRoutes = degraded.state.fast_routes
    assert not fallback.supported and fallback.served == 0
    assert answers == expected
    warnings = [e for e in logs if e["event"] == "serving_fallback"]
    assert len(warnings) == 1, warnings
    assert warnings[0]["component"] == "compiled_routes"
    assert "serialize_response" in warnings[0]["missing"]


async def test_without_fastapis_telemetry_switch_fastapis_own_call_runs(
        demo_dsn: str, fresh_checks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = await _answers(_app(demo_dsn))
    original = FastAPI.__call__
    calls = 0

    async def older_call(self: FastAPI, scope: Any, receive: Any, send: Any) -> None:
        nonlocal calls
        calls += scope["type"] == "http"
        await original(self, scope, receive, send)

    monkeypatch.setattr(FastAPI, "__call__", older_call)  # a FastAPI.__call__ of a shape GatewayApp does not know
    compat.telemetry_switch_missing.cache_clear()
    with capture_logs() as logs:
        answers = await _answers(_app(demo_dsn))
    assert answers == expected
    assert calls == 2 * len(REQUESTS)  # every request went through FastAPI's own __call__
    assert [e["component"] for e in logs if e["event"] == "serving_fallback"] == ["telemetry_switch"]


async def _exchange(config: uvicorn.Config, sock: socket.socket, raw: bytes) -> bytes:
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        reader, writer = await asyncio.open_connection(*sock.getsockname())
        writer.write(raw)
        answer = await asyncio.wait_for(reader.read(-1), 10)  # until the server closes the connection
        writer.close()
    finally:
        server.should_exit = True
        await task
    return answer


async def _echo(request: Request) -> Response:
    return JSONResponse(await request.json())


def _settings() -> Settings:
    settings = Settings()
    settings.server = ServerSettings(max_header_bytes=4096)
    return settings


async def test_without_uvicorns_httptools_internals_h11_serves_with_the_header_bound(
        fresh_checks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from gateway.serving import server

    app = Starlette(routes=[Route("/echo", _echo, methods=["POST"])])
    body = b'{"a": 1}'
    request = (b"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\n"
               b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    huge = b"GET /echo HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 8192  # headers still incomplete

    def config() -> uvicorn.Config:
        built = server._config(app, _settings())  # type: ignore[arg-type]
        built.log_level, built.lifespan = "warning", "off"
        return built

    def listener() -> socket.socket:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        return sock

    bounded = await _exchange(config(), listener(), request)
    assert b" 431 " in (await _exchange(config(), listener(), huge)).split(b"\r\n")[0]

    monkeypatch.delattr(HttpToolsProtocol, "on_message_complete")
    compat.protocol_missing.cache_clear()
    with capture_logs() as logs:
        assert server.bounded_protocol(_settings()) == "h11"
        fallback_config = config()
    assert fallback_config.h11_max_incomplete_event_size == 4096
    assert [e["component"] for e in logs if e["event"] == "serving_fallback"] == ["bounded_protocol"]
    fallback = await _exchange(fallback_config, listener(), request)

    def essentials(raw: bytes) -> tuple[bytes, bytes]:
        head, _, payload = raw.partition(b"\r\n\r\n")
        return head.split(b"\r\n")[0], payload

    assert essentials(fallback) == essentials(bounded) == (b"HTTP/1.1 200 OK", b'{"a":1}')
    refused = (await _exchange(config(), listener(), huge)).split(b"\r\n")[0]
    assert refused.startswith(b"HTTP/1.1 4"), refused  # h11 refuses the oversize head too (400, not 431)
