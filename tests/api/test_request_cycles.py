"""A request served by the gateway's HTTP protocol leaves no reference cycle behind once answered
(gateway.serving.server): its response cycle, scope and the server's per-request helpers are freed by their
reference counts, not left for the cyclic collector (which then walked everything in flight)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from gateway.serving.admission import CLIENT_GONE
from gateway.serving.server import BoundedHttpProtocol


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5000)}.get(name, default)

    def write(self, data: Any) -> None:
        self.written += data

    def writelines(self, parts: Any) -> None:
        for part in parts:
            self.written += part

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def test_an_answered_request_leaves_no_cycle_for_the_collector() -> None:
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        seen.append(scope)
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(app, http=BoundedHttpProtocol, lifespan="off", log_config=None)
    config.load()
    protocol = BoundedHttpProtocol(config=config, server_state=ServerState(), app_state={})
    transport = _Transport()
    protocol.connection_made(transport)
    request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
    gc.collect()
    gc.disable()
    try:
        protocol.data_received(request)
        for _ in range(100):
            if transport.written.endswith(b"ok"):
                break
            await asyncio.sleep(0)
        assert transport.written.startswith(b"HTTP/1.1 200") and transport.written.endswith(b"ok")
        first = weakref.ref(protocol.cycle)
        assert CLIENT_GONE in seen[0]  # the server's per-request helpers were there, referring to the cycle
        seen.clear()
        protocol.data_received(request)  # the next request on the connection takes the protocol's cycle
        for _ in range(100):
            if transport.written.count(b"HTTP/1.1 200") == 2 and transport.written.endswith(b"ok"):
                break
            await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)  # the first request's task finishes and lets go of its frames
        assert first() is None  # freed by its reference count: the collector is off
    finally:
        gc.enable()
        protocol.connection_lost(None)
