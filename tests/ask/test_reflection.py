"""The reflection loop end to end: findings trigger reflections that fix the SQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from gateway.learning.corrections import MemoryCorrections
from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_generation, is_reflection, post_ask, script, sql


def codes(attempt: dict[str, Any]) -> list[str]:
    return [f["code"] for f in attempt["findings"]]


async def test_execution_error_is_fixed_on_retry(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT count(*) AS orders FROM orderz"),
           sql("SELECT count(*) AS orders FROM orders WHERE status <> 'cancelled'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, state):
        response = await post_ask(http, "How many orders were not cancelled?")
        assert response.status_code == 200, response.text
        answer = response.json()
    first, second = answer["attempts"]
    assert codes(first) == ["exec_error"] and first["findings"][0]["sqlstate"] == "42P01"
    assert first["row_count"] is None and not first["passed"]
    assert second["source"] == "reflection" and second["passed"] and codes(second) == []
    assert answer["status"] == "ok" and answer["stop_reason"] == "passed"
    assert answer["sql"] == "SELECT count(*) AS orders FROM orders WHERE status <> 'cancelled'"
    conn = await asyncpg.connect(demo_dsn)
    try:
        expected = await conn.fetchval("SELECT count(*) FROM orders WHERE status <> 'cancelled'")
    finally:
        await conn.close()
    assert answer["rows"] == [[expected]] and answer["columns"][0]["name"] == "orders"
    # The reflection saw the failed SQL and Postgres's own words about it.
    reflection = next(r for r in llm.requests if is_reflection(r))
    assert "FROM orderz" in reflection.last_user and 'relation "orderz" does not exist' in reflection.last_user
    assert "SQLSTATE 42P01" in reflection.last_user
    # The fixed chain went to the corrections sink.
    assert isinstance(state.corrections, MemoryCorrections)
    (correction,) = state.corrections.items
    assert correction.incorrect_sql == "SELECT count(*) AS orders FROM orderz"
    assert correction.corrected_sql == answer["sql"] and correction.source == "reflection"
    assert correction.findings[0]["code"] == "exec_error" and correction.request_id == answer["request_id"]


async def test_empty_result_is_reflected(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT name FROM regions WHERE code = 'weu'"), sql("SELECT name FROM regions WHERE code = 'WEU'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "What is the name of the region with code weu?")).json()
    assert [codes(a) for a in answer["attempts"]] == [["empty_result"], []]
    assert answer["status"] == "ok" and answer["rows"] == [["Western Europe"]]
    reflection = next(r for r in llm.requests if is_reflection(r))
    assert "empty_result" in reflection.last_user and "returned no rows" in reflection.last_user


async def test_one_row_for_a_per_group_question_is_reflected(demo_dsn: str, llm: ScriptedLLM,
                                                              dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT count(*) AS customers FROM customers"),
           sql("SELECT segment, count(*) AS customers FROM customers GROUP BY segment ORDER BY segment"))
    # advisory by default: reflected on only where the policy lists it
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, reflect_on=["grouping_mismatch"])) as (http, _):
        answer = (await post_ask(http, "How many customers are there in each segment?")).json()
    assert [codes(a) for a in answer["attempts"]] == [["grouping_mismatch"], []]
    assert [row[0] for row in answer["rows"]] == ["Consumer", "Enterprise", "Small Business"]


async def test_many_rows_for_a_how_many_question_is_reflected(demo_dsn: str, llm: ScriptedLLM,
                                                               dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT product_id FROM products WHERE is_discontinued"),
           sql("SELECT count(*) AS discontinued FROM products WHERE is_discontinued"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "How many products are discontinued?")).json()
    assert [codes(a) for a in answer["attempts"]] == [["count_mismatch"], []]
    assert answer["status"] == "ok" and answer["row_count"] == 1


async def test_rule_violation_is_reflected(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    (dirs["rules"] / "demo.yaml").write_text(
        "instructions:\n"
        "  - Revenue means the sum of orders.total_amount.\n"
        "required_conditions:\n"
        "  - name: exclude_cancelled\n"
        "    applies_to: orders\n"
        "    sql: \"status <> 'cancelled'\"\n"
        "    message: queries on orders must exclude cancelled orders\n"
    )
    script(llm, sql("SELECT sum(total_amount) AS revenue FROM orders"),
           sql("SELECT sum(total_amount) AS revenue FROM orders WHERE status <> 'cancelled'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, state):
        answer = (await post_ask(http, "What is our total revenue?")).json()
    first, second = answer["attempts"]
    assert codes(first) == ["rule_violation"] and first["findings"][0]["rule"] == "exclude_cancelled"
    assert codes(second) == [] and answer["status"] == "ok"
    generation = next(r for r in llm.requests if is_generation(r))
    reflection = next(r for r in llm.requests if is_reflection(r))
    assert "Revenue means the sum of orders.total_amount" in generation.last_user
    assert "must exclude cancelled orders" in reflection.last_user
    assert len(state.corrections.items) == 1  # type: ignore[attr-defined]


async def test_findings_outside_the_policy_leave_the_answer_suspicious(demo_dsn: str, llm: ScriptedLLM,
                                                                       dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT name FROM regions WHERE code = 'nowhere'"))
    settings = ask_settings(demo_dsn, dirs, llm.base_url, reflect_on=frozenset())
    async with gateway(settings) as (http, _):
        answer = (await post_ask(http, "Which region has the code nowhere?")).json()
    assert answer["status"] == "suspicious" and len(answer["attempts"]) == 1
    assert codes(answer["attempts"][0]) == ["empty_result"] and answer["attempts"][0]["passed"]
    assert not any(is_reflection(r) for r in llm.requests)


async def test_a_failing_sink_never_costs_the_answer(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    class Broken:
        async def record(self, correction: object) -> None:
            raise RuntimeError("store is down")

    script(llm, sql("SELECT count(*) FROM orderz"), sql("SELECT count(*) AS n FROM orders"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, state):
        object.__setattr__(state, "corrections", Broken())  # the state is frozen; the test swaps in a double
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 200 and response.json()["status"] == "ok"


async def test_a_right_first_answer_that_looks_odd_is_not_reflected_on(demo_dsn: str, llm: ScriptedLLM,
                                                                       dirs: dict[str, Path]) -> None:
    # "for each month" over data that holds one month: the SQL groups, and the engine found one group
    right = ("SELECT date_trunc('month', ordered_at) AS month, sum(total_amount) AS revenue FROM orders "
             "WHERE ordered_at >= '2024-12-24' GROUP BY 1")
    script(llm, sql(right), sql("SELECT 1"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "What was the revenue for each month, over orders placed from 2024-12-24 "
                                       "on?")).json()
    assert answer["status"] == "ok" and answer["stop_reason"] == "passed" and answer["row_count"] == 1
    assert [codes(a) for a in answer["attempts"]] == [[]]
    assert not any(is_reflection(r) for r in llm.requests)


async def test_a_ranking_by_a_number_of_things_is_not_a_count(demo_dsn: str, llm: ScriptedLLM,
                                                               dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT p.name FROM order_items oi JOIN products p ON p.product_id = oi.product_id "
                    "GROUP BY p.name ORDER BY sum(oi.quantity) DESC LIMIT 3"), sql("SELECT 1"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "List the top 3 products with the highest number of units sold.")).json()
    assert answer["status"] == "ok" and len(answer["attempts"]) == 1 and answer["row_count"] == 3
    assert not any(is_reflection(r) for r in llm.requests)


async def test_an_aggregate_over_no_matching_rows_is_reflected(demo_dsn: str, llm: ScriptedLLM,
                                                               dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT count(*) AS cancelled FROM orders WHERE status = 'Cancelled'"),
           sql("SELECT count(*) AS cancelled FROM orders WHERE status = 'cancelled'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, state):
        answer = (await post_ask(http, "How many orders were cancelled?")).json()
    first, second = answer["attempts"]
    assert codes(first) == ["empty_aggregate"] and first["findings"][0]["values"] == [0]
    assert codes(second) == [] and answer["status"] == "ok" and answer["rows"][0][0] > 0
    reflection = next(r for r in llm.requests if is_reflection(r))
    assert "empty_aggregate" in reflection.last_user and "matched no rows" in reflection.last_user
    assert state.corrections.items[0].incorrect_sql.endswith("'Cancelled'")  # type: ignore[attr-defined]


async def test_a_reflection_never_replaces_a_passing_answer_with_a_worse_one(demo_dsn: str, llm: ScriptedLLM,
                                                                             dirs: dict[str, Path]) -> None:
    # the zero count is reflected on; the reflection breaks the SQL; the answer keeps the first attempt
    script(llm, sql("SELECT count(*) AS n FROM orders WHERE status = 'Cancelled'"),
           sql("SELECT count(*) AS n FROM orderz WHERE status = 'cancelled'"),
           sql("SELECT count(*) AS n FROM orders WHERE status = 'Cancelled'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "How many orders were cancelled?")).json()
    assert [codes(a) for a in answer["attempts"]] == [["empty_aggregate"], ["exec_error"], ["repeated_sql"]]
    # the third attempt re-states the first: upheld, so ok with the doubt kept
    assert answer["status"] == "ok" and answer["rows"] == [[0]] and answer["attempts"][0]["upheld"] is True
    assert answer["sql"] == "SELECT count(*) AS n FROM orders WHERE status = 'Cancelled'"
    assert [f["code"] for f in answer["findings"]] == ["empty_aggregate"]
