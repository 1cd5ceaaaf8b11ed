"""A `/v1/sql` answer's rows and body count against the process's result budget until the answer has been
sent, and their charge goes however the send ends: sent, refused by a client that left, or cancelled."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest

from gateway.api.routes_sql import _Charged
from gateway.execute.budget import ResultBudget
from gateway.execute.run import QueryResult

BODY = b'{"rows": [[1], [2], [3]]}'
ROWS_BYTES = 100


async def _answer(send: Any) -> None:
    budget = ResultBudget(limit=10_000)
    lease = await budget.admit()
    lease.charge(ROWS_BYTES)
    result = QueryResult(columns=[], rows=[[1], [2], [3]], truncated=False, size_bytes=ROWS_BYTES, lease=lease)
    weakref.finalize(result, lease.release)  # as gateway.execute.run does
    lease.hold_body(len(BODY))
    response = _Charged(BODY, result)
    del result  # the route has returned: only the answer refers to the result now
    gc.collect()
    during: list[int] = []

    async def sending(message: dict[str, Any]) -> None:
        during.append(budget.used)
        await send(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    try:
        await response({"type": "http", "method": "POST"}, receive, sending)
    finally:
        assert during and set(during) == {ROWS_BYTES + len(BODY)}, during  # charged while it is written
        assert budget.used == 0, budget.used  # and nothing after, however the send ended


async def test_a_sent_answer_is_charged_until_sent_then_lets_go() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await _answer(send)
    assert sent[0]["type"] == "http.response.start" and sent[-1]["body"] == BODY


@pytest.mark.parametrize("failure", [OSError("client gone"), asyncio.CancelledError()])
async def test_an_answer_whose_send_fails_lets_go_of_its_charge_too(failure: BaseException) -> None:
    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            raise failure

    with pytest.raises((OSError, asyncio.CancelledError)):
        await _answer(send)
