"""A doubt the model answers: a reflection that re-states the flagged SQL (or its result) upholds the
answer (status ok, the findings kept), and among attempts of equal rank the earlier one is the answer, so a
reflection asked for by a false alarm cannot replace a right answer with a worse one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_reflection, post_ask, script, sql

ZERO = "SELECT count(*) AS orders FROM orders WHERE ordered_at >= '2025-01-01'"  # the data ends in 2024: 0 is right


def codes(attempt: dict[str, Any]) -> list[str]:
    return [f["code"] for f in attempt["findings"]]


async def test_a_true_zero_restated_by_the_model_is_ok_with_the_doubt_kept(demo_dsn: str, llm: ScriptedLLM,
                                                                           dirs: dict[str, Path]) -> None:
    script(llm, sql(ZERO), sql(ZERO.lower()), sql("SELECT 'never asked'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "How many orders were placed in 2025?")).json()
    first, second = answer["attempts"]
    assert codes(first) == ["empty_aggregate"] and codes(second) == ["repeated_sql"]
    assert answer["status"] == "ok" and answer["stop_reason"] == "repeated_sql"
    assert answer["sql"] == ZERO and answer["rows"] == [[0]]
    assert first["upheld"] is True and not first["passed"]
    assert [f["code"] for f in answer["findings"]] == ["empty_aggregate"]  # the doubt stays in the answer
    assert len([r for r in llm.requests if is_reflection(r)]) == 1


async def test_other_sql_with_the_same_result_upholds_the_first_attempt(demo_dsn: str, llm: ScriptedLLM,
                                                                        dirs: dict[str, Path]) -> None:
    same = "SELECT count(order_id) AS orders FROM orders WHERE ordered_at > '2024-12-31 23:59:59.999999'"
    script(llm, sql(ZERO), sql(same), sql("SELECT 'never asked'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "How many orders were placed in 2025?")).json()
    first, second = answer["attempts"]
    assert codes(first) == codes(second) == ["empty_aggregate"] and second["sql"] == same
    assert answer["status"] == "ok" and answer["stop_reason"] == "same_result"
    assert answer["sql"] == ZERO and first["upheld"] is True and "upheld" not in second
    assert len([r for r in llm.requests if is_reflection(r)]) == 1


async def test_a_change_of_mind_after_a_false_alarm_does_not_replace_the_earlier_answer(
        demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    # the reflection, doubting a right 0, writes SQL that returns nothing: equal rank, the earlier one stays
    script(llm, sql(ZERO), sql("SELECT order_id FROM orders WHERE ordered_at >= '2025-01-01'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=1)) as (http, _):
        answer = (await post_ask(http, "How many orders were placed in 2025?")).json()
    assert [codes(a) for a in answer["attempts"]] == [["empty_aggregate"], ["empty_result"]]
    assert answer["sql"] == ZERO and answer["rows"] == [[0]]
    # a different result: nothing upheld it, the doubt remains
    assert answer["status"] == "suspicious" and answer["stop_reason"] == "max_iterations"
    assert not any("upheld" in a for a in answer["attempts"])


async def test_a_rule_broken_is_not_upheld_by_insistence(demo_dsn: str, llm: ScriptedLLM,
                                                         dirs: dict[str, Path]) -> None:
    (dirs["rules"] / "demo.yaml").write_text(
        "required_conditions:\n  - name: exclude_cancelled\n    applies_to: orders\n"
        "    sql: \"status <> 'cancelled'\"\n    message: queries on orders must exclude cancelled orders\n")
    bad = "SELECT sum(total_amount) AS revenue FROM orders"
    script(llm, sql(bad), sql(bad))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "What is the total revenue?")).json()
    assert codes(answer["attempts"][0]) == ["rule_violation"] and answer["stop_reason"] == "repeated_sql"
    assert answer["status"] == "suspicious" and not any("upheld" in a for a in answer["attempts"])


async def test_a_wording_guess_is_shown_but_neither_reflected_on_nor_suspicious(
        demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    # "by customers who ..." names who placed the orders; the wording reads like a grouping
    agent = ("SELECT count(*) AS orders FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
             "WHERE c.signup_date >= '2024-01-01'")
    script(llm, sql(agent))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "What is the number of orders by customers who signed up in 2024?")).json()
    (only,) = answer["attempts"]
    assert codes(only) == ["grouping_mismatch"] and only["passed"]
    assert answer["status"] == "ok" and answer["row_count"] == 1 and codes(answer) == ["grouping_mismatch"]
    assert not any(is_reflection(r) for r in llm.requests)


async def test_a_ranking_with_its_counts_is_not_a_count_mismatch(demo_dsn: str, llm: ScriptedLLM,
                                                                 dirs: dict[str, Path]) -> None:
    ranking = ("SELECT brand, count(*) AS products FROM products GROUP BY brand ORDER BY products DESC, brand "
               "LIMIT 3")
    script(llm, sql(ranking))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "Return the brand and the number of products of the 3 brands with the "
                                       "most products.")).json()
    assert codes(answer["attempts"][0]) == [] and answer["status"] == "ok" and answer["row_count"] == 3
    assert not any(is_reflection(r) for r in llm.requests)
