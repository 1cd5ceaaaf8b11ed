"""The LLM client against the scripted OpenAI-compatible server, over real HTTP through the openai SDK."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from gateway import errors
from gateway.llm.client import LLMClient, is_configured, open_llm
from gateway.llm.pool import LLMPools
from gateway.observability import metrics
from gateway.settings import LLMSettings
from gateway.testing.scripted_llm import Reply, ScriptedLLM

MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture
def scripted(llm: ScriptedLLM) -> ScriptedLLM:
    """The session's scripted LLM (tests/conftest.py), reset around each test."""
    return llm


async def client(scripted: ScriptedLLM, **settings: object) -> AsyncIterator[LLMClient]:
    async with open_llm(LLMSettings(base_url=scripted.base_url, model="m", **settings)) as llm:  # type: ignore[arg-type]
        assert llm is not None
        yield llm


async def complete(scripted: ScriptedLLM, purpose: str = "generate", deadline: float | None = None,
                   **settings: object) -> object:
    async for llm in client(scripted, **settings):
        return await llm.complete(MESSAGES, purpose=purpose, model="m", deadline=deadline)
    raise AssertionError


def counter(metric: object, *labels: str) -> float:
    return float(metric.labels(*labels)._value.get())  # type: ignore[attr-defined]


async def test_reply_text_and_tokens_by_purpose(scripted: ScriptedLLM) -> None:
    scripted.default = Reply("<sql>SELECT 1</sql>", prompt_tokens=11, completion_tokens=7)
    before = counter(metrics.LLM_TOKENS, "judge", "prompt"), counter(metrics.LLM_CALLS, "judge", "ok")
    reply = await complete(scripted, purpose="judge")
    assert reply.text == "<sql>SELECT 1</sql>" and (reply.prompt_tokens, reply.completion_tokens) == (11, 7)
    assert counter(metrics.LLM_TOKENS, "judge", "prompt") == before[0] + 11
    assert counter(metrics.LLM_CALLS, "judge", "ok") == before[1] + 1
    assert scripted.requests[0].body["model"] == "m" and scripted.requests[0].body["temperature"] == 0.0


async def test_429_and_5xx_are_retried(scripted: ScriptedLLM) -> None:
    scripted.add_reply(Reply(status=429), times=1)
    scripted.add_reply(Reply(status=502), times=1)
    scripted.default = "ok"
    reply = await complete(scripted, max_retries=2)
    assert reply.text == "ok" and len(scripted.requests) == 3


async def test_retries_are_bounded(scripted: ScriptedLLM) -> None:
    scripted.default = Reply(status=500)
    with pytest.raises(errors.LLMUnavailable):
        await complete(scripted, max_retries=1)
    assert len(scripted.requests) == 2


async def test_client_errors_are_not_retried(scripted: ScriptedLLM) -> None:
    scripted.default = Reply(status=401)
    with pytest.raises(errors.LLMUnavailable) as caught:
        await complete(scripted, max_retries=3)
    assert len(scripted.requests) == 1 and caught.value.extra["llm_status"] == 401


async def test_the_deadline_bounds_retries_and_timeouts(scripted: ScriptedLLM) -> None:
    # The reply is held past the deadline (released afterwards): the call ends on the deadline, not on a reply
    # that a loaded machine might deliver in time; 2 s leaves the first call ample time to go out.
    held = threading.Event()
    scripted.default = Reply("late", hold=held)
    try:
        with pytest.raises(errors.DeadlineExceeded):
            await complete(scripted, deadline=time.monotonic() + 2.0, max_retries=5, timeout_s=10)
    finally:
        held.set()
    assert len(scripted.requests) == 1


async def test_a_body_that_is_not_a_completion(scripted: ScriptedLLM) -> None:
    scripted.default = Reply(raw_body="{not json")
    with pytest.raises(errors.LLMBadOutput):
        await complete(scripted)
    scripted.default = Reply(raw_body='{"choices": []}')
    with pytest.raises(errors.LLMBadOutput):
        await complete(scripted)


async def test_concurrency_is_bounded(scripted: ScriptedLLM) -> None:
    held = threading.Event()  # no call ends before the test has looked: a slot is freed only by the bound's end
    scripted.default = Reply("ok", hold=held)
    async for llm in client(scripted, max_concurrency=2):
        calls = [asyncio.create_task(llm.complete(MESSAGES, purpose="generate", model="m")) for _ in range(5)]
        try:
            while len(scripted.requests) < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # a third call would have arrived by now if the bound did not hold
            assert len(scripted.requests) == 2
        finally:
            held.set()
        assert [r.text for r in await asyncio.gather(*calls)] == ["ok"] * 5


def test_configuration() -> None:
    assert not is_configured(LLMSettings())
    assert is_configured(LLMSettings(base_url="http://localhost:11434/v1"))
    assert is_configured(LLMSettings(api_key=SecretStr("sk-test")))


async def test_no_endpoint_no_client() -> None:
    async with open_llm(LLMSettings(model="m")) as llm:
        assert llm is None


async def test_bodies_that_are_not_completions_are_bad_output(scripted: ScriptedLLM) -> None:
    # The gateway reads the completion's JSON itself (gateway.llm.pool): every malformed shape is
    # llm_bad_output, never a crash.
    for body in ('[]', '"text"', '{"choices": "x"}', '{"choices": [1]}', '{"choices": [{"message": "x"}]}',
                 '{"choices": [{"message": {"content": null}}]}', '{"choices": [{"message": {"content": 5}}]}',
                 '{"choices": ' + '[' * 100_000 + ']' * 100_000 + '}'):  # deeper than the JSON parser recurses
        scripted.default = Reply(raw_body=body)
        with pytest.raises(errors.LLMBadOutput):
            await complete(scripted)


async def test_odd_usage_counts_as_no_tokens(scripted: ScriptedLLM) -> None:
    scripted.default = Reply(raw_body='{"choices": [{"message": {"content": "ok"}}], "model": "x", '
                                      '"usage": {"prompt_tokens": "many", "completion_tokens": 3.0}}')
    reply = await complete(scripted)
    assert (reply.text, reply.model, reply.prompt_tokens, reply.completion_tokens) == ("ok", "x", 0, 3)


async def test_calls_spread_over_small_connection_pools(scripted: ScriptedLLM) -> None:
    # Several small pools instead of one large one (gateway.llm.pool): no pool ever carries more calls
    # than its connections (a new pool opens when the open ones are full), and every admitted call is in
    # flight at once.
    hold = threading.Event()
    scripted.default = Reply("ok", hold=hold)
    settings = LLMSettings(base_url=scripted.base_url, model="m", max_concurrency=7)
    pools = LLMPools(settings, "not-needed", per_pool=3)
    llm = LLMClient(settings, pools)
    try:
        calls = [asyncio.create_task(llm.complete(MESSAGES, purpose="generate", model="m")) for _ in range(7)]
        while len(scripted.requests) < 7:
            await asyncio.sleep(0.01)
        assert pools.max_pools == 3 and len(pools.clients) == 3 and sorted(pools.busy) == [1, 3, 3]
        assert await llm.unreachable() is None  # the probe takes a spare connection, not a queue place
        hold.set()
        assert [r.text for r in await asyncio.gather(*calls)] == ["ok"] * 7
        assert max(pools.peak) == 3 and pools.busy == [0, 0, 0]
    finally:
        hold.set()
        await llm.close()
