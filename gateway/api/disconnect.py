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
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

from gateway import errors
from gateway.observability.logging import get_logger

T = TypeVar("T")
log = get_logger(__name__)


async def cancel_on_disconnect(request: Request, work: Awaitable[T]) -> T:
    """The result of ``work``, unless the client disconnects first: then ``work`` is cancelled."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # the server itself cancelled the request (e.g. shutting down)
        task.cancel()
        gone.cancel()
        raise
    if task.done() or not _really_gone(gone):
        gone.cancel()
        return await task
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception as exc:  # noqa: BLE001 - nobody is left to tell; the cancellation is what matters
        log.info("work_after_disconnect_failed", error=repr(exc))
    raise errors.ClientClosedRequest("the client disconnected before the answer; its query was cancelled")


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
