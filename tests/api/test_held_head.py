"""A response head with a Content-Length leaves in the same write as the body (gateway.serving.server._HeldHead);
everything else is written as uvicorn writes it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gateway.serving.server import _HeldHead


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def writelines(self, parts: Any) -> None:
        self.writes.append(b"".join(parts))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def _held() -> tuple[_HeldHead, Any, _Transport]:
    transport = _Transport()
    cycle = SimpleNamespace(response_started=False, chunked_encoding=None)
    return _HeldHead(transport, cycle), cycle, transport  # type: ignore[arg-type]


def test_a_head_with_a_content_length_leaves_with_the_body() -> None:
    held, cycle, transport = _held()
    held.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # before the response: at once
    cycle.response_started, cycle.chunked_encoding = True, False
    held.write(b"HEAD")
    assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    held.write(b"body")
    held.write(b"more")  # a second body chunk is no head
    assert transport.writes[1:] == [b"HEADbody", b"more"]
    assert held.is_closing() is False  # everything else is the transport's


def test_a_large_body_is_not_copied_behind_its_head() -> None:
    held, cycle, transport = _held()
    cycle.response_started, cycle.chunked_encoding = True, False
    held.write(b"HEAD")
    held.write(b"x" * 100_000)
    assert transport.writes == [b"HEAD" + b"x" * 100_000]


def test_a_chunked_head_leaves_at_once() -> None:
    held, cycle, transport = _held()
    cycle.response_started, cycle.chunked_encoding = True, True
    held.write(b"HEAD")
    assert transport.writes == [b"HEAD"]


def test_a_head_without_body_leaves_on_flush_or_close() -> None:
    held, cycle, transport = _held()
    cycle.response_started, cycle.chunked_encoding = True, False
    held.write(b"HEAD")
    held.flush()  # the end of a HEAD answer
    held.flush()
    assert transport.writes == [b"HEAD"]
    held, cycle, transport = _held()
    cycle.response_started, cycle.chunked_encoding = True, False
    held.write(b"HEAD")
    held.close()  # an app that failed after starting its answer: the head, then the close
    assert (transport.writes, transport.closed) == ([b"HEAD"], True)


async def test_pipelined_requests_each_get_their_head() -> None:
    """A HEAD answer has no body to carry its held head: it leaves when that request's response completes,
    even when the client has already sent its next request on the connection (pipelining)."""
    import asyncio
    import socket

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from gateway.serving.server import bounded_protocol
    from gateway.settings import Settings

    async def hello(request: Any) -> Response:
        return JSONResponse({"status": "ok"})

    async def empty(request: Any) -> Response:
        return Response(b"", status_code=200)

    app = Starlette(routes=[Route("/hello", hello, methods=["GET", "HEAD"]), Route("/empty", empty)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           http=bounded_protocol(Settings())))  # type: ignore[arg-type]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        reader, writer = await asyncio.open_connection(*sock.getsockname())
        request = "{} {} HTTP/1.1\r\nHost: localhost\r\n\r\n"
        writer.write("".join(request.format(*r) for r in [("HEAD", "/hello"), ("GET", "/empty"), ("HEAD", "/hello"),
                                                          ("GET", "/hello")]).encode()
                     + b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        raw = await asyncio.wait_for(reader.read(-1), 10)  # until the server closes after the last answer
        writer.close()
    finally:
        server.should_exit = True
        await task
    heads = raw.split(b"HTTP/1.1 ")[1:]
    assert len(heads) == 5, raw
    assert [h.endswith(b'{"status":"ok"}') for h in heads] == [False, False, False, True, True], raw
