"""Stop a request's work when its client goes away.

A ``POST /v1/sql`` whose client disconnected would otherwise keep its query running until
``statement_timeout``, holding a pool connection nobody waits for. :func:`cancel_on_disconnect` runs the
work next to a watcher of the ASGI ``http.disconnect`` message; when the client leaves first, the work is
cancelled (asyncpg then sends the server a cancel request and the pool gets its connection back) and the
request ends as ``client_closed_request`` (499, seen only in logs and metrics). ``/v1/ask``'s event stream
stops its work the same way through Starlette's streaming response.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from starlette.requests import Request

from gateway import errors
from gateway.serving.admission import CLIENT_GONE

T = TypeVar("T")


async def cancel_on_disconnect(request: Request, work: Awaitable[T]) -> T:
    """The result of ``work``, unless the client disconnects first: then ``work`` is cancelled.

    ``work`` runs in the request's own task, so what it binds to the log context reaches the request log.
    Under the gateway's own server the server says when the client leaves (``CLIENT_GONE`` in the scope,
    gateway.serving.server); elsewhere (another ASGI server, a test client) a task waits on ``receive()``.
    """
    task = asyncio.current_task()
    assert task is not None
    left = False

    def client_gone() -> None:
        nonlocal left
        left = True
        task.cancel()

    watch = request.scope.get(CLIENT_GONE)
    unwatch = watch(client_gone) if watch is not None else _watch_receive(request, client_gone)
    try:
        return await work
    except asyncio.CancelledError:
        if not left:
            raise  # the server itself cancelled the request (e.g. shutting down)
        task.uncancel()
        raise _closed() from None
    finally:
        unwatch()


def _watch_receive(request: Request, client_gone: Callable[[], None]) -> Callable[[], None]:
    """Another server's way: a task waiting on ``receive()`` calls ``client_gone`` when it says disconnect;
    returns the function that stops it."""
    def client_left(watcher: asyncio.Future[None]) -> None:
        if _really_gone(watcher):
            client_gone()

    gone = asyncio.ensure_future(_disconnected(request))
    gone.add_done_callback(client_left)

    def unwatch() -> None:
        gone.remove_done_callback(client_left)
        gone.cancel()

    return unwatch


def _closed() -> errors.ClientClosedRequest:
    return errors.ClientClosedRequest("the client disconnected before the answer; its query was cancelled")


def _really_gone(gone: asyncio.Future[None]) -> bool:
    """The watcher saw ``http.disconnect`` (it may also end with an error of the server's receive)."""
    if not gone.done():
        return False
    with contextlib.suppress(asyncio.CancelledError):
        return gone.exception() is None
    return False


async def _disconnected(request: Request) -> None:
    # The body has been read by now, so the next ASGI message can only be the disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass
