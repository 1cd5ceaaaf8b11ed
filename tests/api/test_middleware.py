"""The HTTP middleware answers a bug's exception itself, so the server keeps the connection."""

from __future__ import annotations

import json

from starlette.types import Message, Receive, Scope, Send

from gateway.serving.admission import GatewayMiddleware


async def _broken(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    raise RuntimeError("a bug")


async def _half_answer(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    raise RuntimeError("a bug mid-answer")


def _scope() -> Scope:
    return {"type": "http", "method": "POST", "path": "/v1/sql", "headers": [(b"content-type", b"application/json")],
            "client": ("127.0.0.1", 5000), "state": {}}


async def _call(app: GatewayMiddleware) -> tuple[list[Message], BaseException | None]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    try:
        await app(_scope(), receive, send)
    except Exception as exc:  # noqa: BLE001 - what escapes is what the test looks at
        return sent, exc
    return sent, None


async def test_an_unexpected_error_is_a_500_problem_and_does_not_escape() -> None:
    sent, escaped = await _call(GatewayMiddleware(_broken, max_body_bytes=1000))
    # Nothing escapes to uvicorn, which would close the connection under the client's next request.
    assert escaped is None
    start, body = sent[0], sent[1]
    assert start["status"] == 500
    assert (b"connection", b"close") not in start["headers"]
    assert json.loads(body["body"])["code"] == "internal_error"


async def test_an_error_after_the_answer_started_still_closes_the_connection() -> None:
    sent, escaped = await _call(GatewayMiddleware(_half_answer, max_body_bytes=1000))
    assert isinstance(escaped, RuntimeError)  # only a closed connection tells the client the answer is cut
    assert [m["type"] for m in sent] == ["http.response.start"]
