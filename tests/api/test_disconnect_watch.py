"""How `/v1/sql` learns that its client left: from the gateway's own server (``CLIENT_GONE`` in the scope, no task
per request) or, under any other ASGI server, from a task waiting on ``receive()``. Both cancel the work and
answer ``client_closed_request``; a cancellation that is not the client's stays a cancellation.
(tests/faults/test_disconnect.py closes a real socket under a real ``serve``.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from starlette.requests import Request

from gateway import errors
from gateway.api.disconnect import cancel_on_disconnect
from gateway.serving.admission import CLIENT_GONE
from gateway.serving.server import _ClientWatch


class _Cycle:
    """What _ClientWatch reads of uvicorn's RequestResponseCycle."""

    def __init__(self) -> None:
        self.disconnected = False
        self.resumed = 0
        self.flow = self

    def resume_reading(self) -> None:
        self.resumed += 1


def _request(receive: Callable[[], Any], watch: Any = None) -> Request:
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/v1/sql", "headers": []}
    if watch is not None:
        scope[CLIENT_GONE] = watch
    return Request(scope, receive)


async def _never() -> dict[str, Any]:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def test_without_the_servers_hook_a_receive_that_says_disconnect_cancels_the_work() -> None:
    gone = asyncio.Event()
    finished = []

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def work() -> str:
        try:
            await asyncio.sleep(30)
        finally:
            finished.append("work ended")
        return "answer"

    call = asyncio.create_task(cancel_on_disconnect(_request(receive), work()))
    await asyncio.sleep(0.01)
    gone.set()
    with pytest.raises(errors.ClientClosedRequest):
        await asyncio.wait_for(call, 5)
    assert finished == ["work ended"]


async def test_with_the_servers_hook_the_client_leaving_cancels_the_work_and_no_receive_is_awaited() -> None:
    cycle = _Cycle()
    watch = _ClientWatch(cycle)  # type: ignore[arg-type]
    receives = []

    async def receive() -> dict[str, Any]:
        receives.append(1)
        return await _never()

    call = asyncio.create_task(cancel_on_disconnect(_request(receive, watch), asyncio.sleep(30, "answer")))
    await asyncio.sleep(0.01)
    assert cycle.resumed == 1  # the socket is read, so that a close is seen
    cycle.disconnected = True
    watch.gone()  # what BoundedHttpProtocol.connection_lost does for the current request
    with pytest.raises(errors.ClientClosedRequest):
        await asyncio.wait_for(call, 5)
    assert receives == []


async def test_with_the_servers_hook_a_client_gone_before_the_work_began_is_seen_at_once() -> None:
    cycle = _Cycle()
    cycle.disconnected = True
    with pytest.raises(errors.ClientClosedRequest):
        await asyncio.wait_for(cancel_on_disconnect(_request(_never, _ClientWatch(cycle)),  # type: ignore[arg-type]
                                                    asyncio.sleep(30, "answer")), 5)


async def test_a_client_gone_before_work_that_fails_at_once_leaves_no_cancel_behind() -> None:
    # The work refuses before it ever waits (an unknown database, a blocked statement): its error is the
    # answer, and nothing of the client's leaving may cancel what the request does next (its error answer).
    cycle = _Cycle()
    cycle.disconnected = True

    async def refused() -> str:
        raise errors.UnknownDatabase("no database 'nope'")

    async def request() -> str:
        try:
            await cancel_on_disconnect(_request(_never, _ClientWatch(cycle)), refused())  # type: ignore[arg-type]
        except errors.UnknownDatabase:
            pending = asyncio.current_task().cancelling()  # type: ignore[union-attr]
            await asyncio.sleep(0)  # the error answer's first await
            await asyncio.sleep(0)
            return f"answered the error, {pending} cancel(s) pending"
        raise AssertionError("the refusal was not raised")

    assert await asyncio.wait_for(request(), 5) == "answered the error, 0 cancel(s) pending"


async def test_the_hook_is_let_go_once_the_answer_is_there() -> None:
    cycle = _Cycle()
    watch = _ClientWatch(cycle)  # type: ignore[arg-type]
    assert await cancel_on_disconnect(_request(_never, watch), asyncio.sleep(0, "answer")) == "answer"
    cycle.disconnected = True
    watch.gone()  # the client leaves after its answer: nothing of the finished request is cancelled
    assert watch._callback is None


@pytest.mark.parametrize("hooked", [True, False])
async def test_a_cancellation_that_is_not_the_clients_stays_a_cancellation(hooked: bool) -> None:
    watch = _ClientWatch(_Cycle()) if hooked else None  # type: ignore[arg-type]
    call = asyncio.create_task(cancel_on_disconnect(_request(_never, watch), asyncio.sleep(30, "answer")))
    await asyncio.sleep(0.01)
    call.cancel()  # the server shutting down, say
    with pytest.raises(asyncio.CancelledError):
        await call
