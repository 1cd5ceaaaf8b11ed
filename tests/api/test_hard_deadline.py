"""The request's deadline is enforced by the middleware, not only read by the stages: a handler that never
returns is cancelled and the request answers 504 ``deadline_exceeded`` (a started event stream gets a last
``problem`` event); work after a complete answer is not cut short. The handlers here ignore the deadline on
purpose: they stand for any stage whose own bound failed."""

from __future__ import annotations

import asyncio
import json

from starlette.types import Message, Receive, Scope, Send

from gateway.serving import deadline
from gateway.serving.admission import GatewayMiddleware

TIMEOUT_S = 0.2
GUARD_S = 30.0  # far beyond the deadline: reaching it means nothing cancelled the handler


def _scope() -> Scope:
    return {"type": "http", "method": "POST", "path": "/v1/ask", "headers": [(b"content-type", b"application/json")],
            "client": ("127.0.0.1", 5000), "state": {}}


async def _call(app: GatewayMiddleware) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    async with asyncio.timeout(GUARD_S):
        await app(_scope(), receive, send)
    return sent


async def test_a_handler_that_never_returns_is_cancelled_and_answers_504() -> None:
    cancelled = asyncio.Event()

    async def stuck(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await asyncio.Event().wait()  # a lock, a socket, a frozen database: nothing it bounds itself
        except asyncio.CancelledError:
            cancelled.set()
            raise

    middleware = GatewayMiddleware(stuck, max_body_bytes=1000, request_timeout_s=TIMEOUT_S)
    sent = await _call(middleware)
    assert cancelled.is_set()
    assert sent[0]["status"] == 504
    assert dict(sent[0]["headers"])[b"content-type"] == b"application/problem+json"
    assert json.loads(sent[1]["body"])["code"] == "deadline_exceeded"
    assert middleware.in_flight.count == 0 and middleware.per_key.counts == {}  # the slots were given back


async def test_a_started_event_stream_ends_with_a_problem_event() -> None:
    async def stream(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
        await send({"type": "http.response.body", "body": b"event: attempt\ndata: {}\n\n", "more_body": True})
        await asyncio.Event().wait()

    sent = await _call(GatewayMiddleware(stream, max_body_bytes=1000, request_timeout_s=TIMEOUT_S))
    assert sent[0]["status"] == 200
    last = sent[-1]
    assert last["more_body"] is False
    event, data = last["body"].decode().strip().split("\n")
    assert event == "event: problem"
    assert json.loads(data.removeprefix("data: "))["code"] == "deadline_exceeded"


async def test_work_after_a_complete_answer_is_not_cut_short() -> None:
    finished = asyncio.Event()

    async def answer_then_work(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})
        await asyncio.sleep(TIMEOUT_S + deadline.HARD_GRACE_S + 0.2)  # a background task, bounded on its own
        finished.set()

    sent = await _call(GatewayMiddleware(answer_then_work, max_body_bytes=1000, request_timeout_s=TIMEOUT_S))
    assert finished.is_set()
    assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [200]


async def test_per_key_cap_answers_429_and_frees_the_global_slot() -> None:
    release = asyncio.Event()

    async def held(scope: Scope, receive: Receive, send: Send) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})

    middleware = GatewayMiddleware(held, max_body_bytes=1000, max_in_flight=10, max_in_flight_per_key=2)
    first = [asyncio.create_task(_call(middleware)) for _ in range(2)]
    while middleware.in_flight.count < 2:
        await asyncio.sleep(0.01)
    refused = await _call(middleware)
    assert refused[0]["status"] == 429 and json.loads(refused[1]["body"])["code"] == "too_many_in_flight"
    assert middleware.in_flight.count == 2  # the refused request gave its global slot back
    release.set()
    assert [s[0]["status"] for s in await asyncio.gather(*first)] == [200, 200]
    assert middleware.per_key.counts == {}
