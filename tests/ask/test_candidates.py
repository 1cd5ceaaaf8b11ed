"""Several first-pass candidates (``ask.candidates``), chosen by what their SQL returns.

The scripted LLM tells candidates apart by the way of working their prompt adds (the first has none), so each
test decides what every candidate answers, whatever order the calls arrive in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from gateway.learning.corrections import MemoryCorrections
from gateway.pipeline import prompts
from gateway.pipeline.candidates import draws
from gateway.settings import AskPolicy
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_generation, is_reflection, post_ask, sql
from tests.ask.test_streaming_and_metrics import STREAM, parse_sse

ORDERS = "SELECT count(*) FROM orders"
ORDERS_TOO = "SELECT count(order_id) AS orders FROM orders"  # another spelling, the same result
SHIPPED = "SELECT count(*) FROM orders WHERE status = 'shipped'"
CUSTOMERS = "SELECT count(*) FROM customers"


def variant_of(request: LLMRequest) -> str:
    return next((name for name, text in prompts.CANDIDATE_STRATEGIES.items() if text in request.last_user), "plain")


def by_variant(llm: ScriptedLLM, replies: dict[str, str | Reply]) -> None:
    """Answer each candidate by its prompt variant: plain (the first), plan, divide, values."""
    def rule(request: LLMRequest) -> str | Reply | None:
        if not is_generation(request):
            return None
        reply = replies[variant_of(request)]
        return sql(reply) if isinstance(reply, str) else reply

    llm.add(rule)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"database": "demo", **labels}) or 0.0


def is_selector(request: LLMRequest) -> bool:
    return request.system == prompts.SELECT_SYSTEM


async def ask(demo_dsn: str, dirs: dict[str, Path], llm: ScriptedLLM, question: str = "How many orders are there?",
              llm_settings: dict[str, Any] | None = None, **policy: Any) -> dict[str, Any]:
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, llm=llm_settings, **policy)) as (http, _):
        response = await post_ask(http, question)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def order_count(demo_dsn: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(demo_dsn)
    try:
        return int(await conn.fetchval(ORDERS))
    finally:
        await conn.close()


def test_candidates_are_the_plain_prompt_then_each_way_of_working_in_turn() -> None:
    drawn = draws(AskPolicy(candidates=5, temperature=0.1, candidate_temperature=0.9))
    assert [(d.index, d.variant, d.temperature) for d in drawn] == [
        (1, "plain", 0.1), (2, "plan", 0.9), (3, "divide", 0.9), (4, "values", 0.9), (5, "plan", 0.9)]
    with pytest.raises(ValueError):
        AskPolicy(candidates=0)


async def test_candidates_that_agree_answer_with_the_first_of_their_group(demo_dsn: str, llm: ScriptedLLM,
                                                                          dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": ORDERS, "plan": ORDERS_TOO})
    body = await ask(demo_dsn, dirs, llm, candidates=2)
    assert body["status"] == "ok" and body["sql"] == ORDERS and body["rows"] == [[await order_count(demo_dsn)]]
    assert [(a["n"], a["source"], a["candidate"]["variant"]) for a in body["attempts"]] == [
        (1, "candidate", "plain"), (2, "candidate", "plan")]
    summary = body["candidates"]
    assert summary["selection"] == "unanimous" and summary["chosen"] == 1 and summary["agreement"] == 1.0
    assert summary["groups"] == [{"attempts": [1, 2], "size": 2, "passed": True}]
    generations = [r for r in llm.requests if is_generation(r)]
    # the first candidate is the single generation: the plain prompt at the database's temperature
    assert sorted((variant_of(r), r.body["temperature"]) for r in generations) == [("plain", 0.0), ("plan", 0.7)]
    assert not any(is_reflection(r) for r in llm.requests)


async def test_the_largest_group_wins_over_minorities(demo_dsn: str, llm: ScriptedLLM,
                                                      dirs: dict[str, Path]) -> None:
    # 4 candidates: the plain one counts shipped orders, two agree on all orders, one counts customers
    by_variant(llm, {"plain": SHIPPED, "plan": ORDERS, "divide": ORDERS_TOO, "values": CUSTOMERS})
    body = await ask(demo_dsn, dirs, llm, candidates=4)
    assert body["status"] == "ok" and body["sql"] == ORDERS and body["rows"] == [[await order_count(demo_dsn)]]
    summary = body["candidates"]
    assert summary["selection"] == "largest_group" and summary["chosen"] == 2 and summary["agreement"] == 0.5
    assert [g["attempts"] for g in summary["groups"]] == [[2, 3], [1], [4]]
    assert summary["cancelled"] == [] and len(body["attempts"]) == 4


async def test_a_tie_goes_to_the_lowest_numbered_candidate_by_default(demo_dsn: str, llm: ScriptedLLM,
                                                                      dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": SHIPPED, "plan": ORDERS})
    body = await ask(demo_dsn, dirs, llm, candidates=2)
    assert body["sql"] == SHIPPED and body["candidates"]["selection"] == "tie_first"
    assert [g["attempts"] for g in body["candidates"]["groups"]] == [[1], [2]]
    assert not any(is_selector(r) for r in llm.requests)


async def test_the_llm_selector_breaks_a_tie(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": SHIPPED, "plan": ORDERS})
    llm.add(lambda r: Reply("<thinking>all orders</thinking><choice>2</choice>", prompt_tokens=5000,
                            completion_tokens=9) if is_selector(r) else None)
    body = await ask(demo_dsn, dirs, llm, candidates=2, selector="llm")
    assert body["status"] == "ok" and body["sql"] == ORDERS
    summary = body["candidates"]
    assert summary["selection"] == "tie_selector" and summary["chosen"] == 2
    assert summary["selector"] == {"options": [1, 2], "choice": 2}
    [selection] = [r for r in llm.requests if is_selector(r)]
    assert SHIPPED in selection.last_user and ORDERS in selection.last_user
    assert body["attempts"][1]["tokens"]["prompt"] > 5000  # the selector's call is booked on its choice


async def test_a_selector_that_names_no_option_keeps_the_first(demo_dsn: str, llm: ScriptedLLM,
                                                               dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": SHIPPED, "plan": ORDERS})
    llm.add(lambda r: "<choice>7</choice>" if is_selector(r) else None)
    body = await ask(demo_dsn, dirs, llm, candidates=2, selector="llm")
    assert body["sql"] == SHIPPED and body["candidates"]["selection"] == "tie_first"
    assert body["candidates"]["selector"] == {"options": [1, 2], "choice": None}


async def test_blocked_erroring_and_lost_candidates_do_not_sink_the_one_that_passes(
        demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": "DELETE FROM orders", "plan": Reply(status=500),
                     "divide": "SELECT count(*) FROM orderz", "values": ORDERS})
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, candidates=4)) as (http, state):
        response = await post_ask(http, "How many orders are there?")
    body = response.json()
    assert body["status"] == "ok" and body["sql"] == ORDERS and body["candidates"]["chosen"] == 4
    codes = {a["n"]: [f["code"] for f in a["findings"]] for a in body["attempts"]}
    assert codes == {1: ["blocked"], 2: ["no_sql"], 3: ["exec_error"], 4: []}
    assert body["attempts"][1]["findings"][0]["error"] == "llm_unavailable"
    assert body["candidates"]["groups"] == [{"attempts": [4], "size": 1, "passed": True}]
    assert body["candidates"]["others"] == [1, 2, 3]
    assert not any(is_reflection(r) for r in llm.requests)  # something passed: nothing to reflect on
    # the failed candidates' SQL, side by side with the chosen one, are corrections like a reflection's
    assert isinstance(state.corrections, MemoryCorrections)
    assert sorted(c.incorrect_sql for c in state.corrections.items) == ["DELETE FROM orders",
                                                                         "SELECT count(*) FROM orderz"]
    assert {c.corrected_sql for c in state.corrections.items} == {ORDERS}


async def test_when_none_passes_reflection_works_on_the_chosen_candidate(demo_dsn: str, llm: ScriptedLLM,
                                                                         dirs: dict[str, Path]) -> None:
    blocked = "SELECT pg_sleep(1)"
    by_variant(llm, {"plain": "SELECT count(*) FROM orderz", "plan": blocked})
    llm.add(lambda r: sql(ORDERS) if is_reflection(r) else None, times=1)
    body = await ask(demo_dsn, dirs, llm, candidates=2)
    assert body["status"] == "ok" and body["sql"] == ORDERS
    assert [(a["n"], a["source"]) for a in body["attempts"]] == [(1, "candidate"), (2, "candidate"),
                                                                 (3, "reflection")]
    assert body["candidates"]["selection"] == "none_ran" and body["candidates"]["chosen"] == 1
    [reflection] = [r for r in llm.requests if is_reflection(r)]
    # an execution error ranks above a blocked statement: the reflection sees that one, not the other
    assert "orderz" in reflection.last_user and "pg_sleep" not in reflection.last_user


async def test_every_candidate_failing_fails_the_question(demo_dsn: str, llm: ScriptedLLM,
                                                          dirs: dict[str, Path]) -> None:
    llm.add(lambda r: Reply(status=500) if is_generation(r) else None)
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, candidates=3)) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 503 and response.json()["code"] == "llm_unavailable"


async def test_a_hanging_candidate_is_cancelled_once_a_majority_agrees(demo_dsn: str, llm: ScriptedLLM,
                                                                      dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": ORDERS, "plan": ORDERS_TOO, "divide": Reply(hang=True)})
    cancelled = REGISTRY.get_sample_value("nl2sql_llm_calls_total", {"purpose": "generate", "outcome": "cancelled"})
    # a time budget far beyond the test's patience: only cancelling the hanging call answers at all
    body = await ask(demo_dsn, dirs, llm, candidates=3, time_budget_s=600, llm_settings={"timeout_s": 600})
    assert REGISTRY.get_sample_value("nl2sql_llm_calls_total", {"purpose": "generate", "outcome": "cancelled"}) \
        == (cancelled or 0.0) + 1
    assert body["status"] == "ok" and body["sql"] == ORDERS
    assert body["candidates"]["cancelled"] == [3] and [a["n"] for a in body["attempts"]] == [1, 2]
    assert body["candidates"]["selection"] == "largest_group" and body["candidates"]["agreement"] == 0.6667


async def test_one_candidate_is_todays_single_generation(demo_dsn: str, llm: ScriptedLLM,
                                                         dirs: dict[str, Path]) -> None:
    llm.add(lambda r: sql(ORDERS) if is_generation(r) else None)
    body = await ask(demo_dsn, dirs, llm)
    assert body["status"] == "ok" and "candidates" not in body
    assert [(a["source"], "candidate" in a) for a in body["attempts"]] == [("generation", False)]
    [generation] = llm.requests
    assert not any(text in generation.last_user for text in prompts.CANDIDATE_STRATEGIES.values())


async def test_the_stream_shows_the_candidates_then_their_groups(demo_dsn: str, llm: ScriptedLLM,
                                                                 dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": "SELECT count(*) FROM orderz", "plan": SHIPPED, "divide": ORDERS})
    ties, agreements = sample("nl2sql_candidate_selections_total", selection="tie_first"), \
        sample("nl2sql_candidates_agreement_count")
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, candidates=3)) as (http, _):
        response = await http.post("/v1/ask", json={"question": "How many orders?", "database": "demo"},
                                   headers=STREAM)
        metrics = (await http.get("/metrics")).text
    events = parse_sse(response.text)
    names = [name for name, _ in events]
    assert names == ["attempt", "attempt", "attempt", "candidates", "answer"]
    answer = events[-1][1]
    assert events[3][1] == answer["candidates"]
    assert answer["candidates"]["selection"] == "tie_first" and answer["candidates"]["chosen"] == 2
    assert [g["size"] for g in answer["candidates"]["groups"]] == [1, 1]
    assert sorted(data["n"] for name, data in events if name == "attempt") == [1, 2, 3]
    assert 'nl2sql_candidate_selections_total{database="demo",selection="tie_first"}' in metrics
    assert sample("nl2sql_candidate_selections_total", selection="tie_first") == ties + 1
    assert sample("nl2sql_candidates_agreement_count") == agreements + 1
    assert sample("nl2sql_candidates_agreement_sum") is not None


async def test_the_stream_carries_the_reflection_after_the_candidates(demo_dsn: str, llm: ScriptedLLM,
                                                                      dirs: dict[str, Path]) -> None:
    by_variant(llm, {"plain": "SELECT count(*) FROM orderz", "plan": "SELECT count(*) FROM orderzz"})
    llm.add(lambda r: sql(ORDERS) if is_reflection(r) else None)
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, candidates=2)) as (http, _):
        response = await http.post("/v1/ask", json={"question": "How many orders?", "database": "demo"},
                                   headers=STREAM)
    events = parse_sse(response.text)
    assert [name for name, _ in events] == ["attempt", "attempt", "candidates", "attempt", "answer"]
    assert events[3][1]["source"] == "reflection" and events[3][1]["n"] == 3
    assert events[-1][1]["status"] == "ok" and events[-1][1]["candidates"]["selection"] == "none_ran"
