"""A `/v1/sql` answer's body counts against the process's result budget until it has been sent, and lets
go of it however the send ends: sent, refused by a client that left, or cancelled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.api.routes_sql import _Charged
from gateway.execute.budget import ResultBudget

BODY = b'{"rows": [[1], [2], [3]]}'


async def _answer(send: Any) -> ResultBudget:
    budget = ResultBudget(limit=10_000)
    lease = await budget.admit()
    lease.hold_body(len(BODY))
    assert budget.used == len(BODY)
    response = _Charged(BODY, lease.drop_body)

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    try:
        await response({"type": "http", "method": "POST"}, receive, send)
    finally:
        assert budget.used == 0, budget.used
    return budget


async def test_a_sent_answer_lets_go_of_its_charge() -> None:
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
