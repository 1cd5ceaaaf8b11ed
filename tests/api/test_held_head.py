"""A response head with a Content-Length leaves in the same write as the body (gateway.api.server._HeldHead);
everything else is written as uvicorn writes it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gateway.api.server import _HeldHead


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
