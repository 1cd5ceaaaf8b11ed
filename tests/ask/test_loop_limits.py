"""Where the loop stops: unsafe SQL never runs, max_iterations, the time budget, repeated SQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gateway.pipeline.execute as ask_module
from gateway.testing.scripted_llm import Reply, ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_reflection, post_ask, script, sql


def codes(attempt: dict[str, Any]) -> list[str]:
    return [f["code"] for f in attempt["findings"]]


async def test_unsafe_sql_is_blocked_and_never_run(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    executed: list[str] = []
    real_run_query = ask_module.run_query

    async def spy(target: Any, text: str, **kwargs: Any) -> Any:  # counts, then runs for real
        executed.append(text)
        return await real_run_query(target, text, **kwargs)

    monkeypatch.setattr(ask_module, "run_query", spy)
    # Each would fail loudly if it ran: a write on a read-only role, a 60 s sleep past the 3 s statement
    # timeout, and a second statement dividing by zero.
    script(llm, sql("DELETE FROM orders WHERE true"), sql("SELECT pg_sleep(60)"),
           sql("SELECT 1 AS one; SELECT 1/0"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=2)) as (http, _):
        response = await post_ask(http, "Delete the orders")
    answer = response.json()
    assert response.status_code == 200 and answer["status"] == "blocked"
    assert executed == []
    for attempt in answer["attempts"]:
        assert codes(attempt) == ["blocked"] and attempt["findings"][0]["codes"]
        assert attempt["row_count"] is None and attempt["timings"]["db_ms"] == 0
    assert answer["attempts"][0]["findings"][0]["codes"] == ["write_statement"]
    assert answer["rows"] == [] and answer["stop_reason"] == "max_iterations"
    reflection = [r for r in llm.requests if is_reflection(r)][-1]
    assert "not run (blocked)" in reflection.last_user and "pg_sleep" in reflection.last_user


async def test_max_iterations_is_respected(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT nope_0 FROM orders"), *(sql(f"SELECT nope_{i} FROM orders") for i in range(1, 9)))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=2)) as (http, _):
        answer = (await post_ask(http, "What is nope?")).json()
    assert len(answer["attempts"]) == 3 and len(llm.requests) == 3
    assert answer["status"] == "failed" and answer["stop_reason"] == "max_iterations"
    assert answer["sql"] == "SELECT nope_0 FROM orders"  # among equals, the earliest attempt is the answer


async def test_zero_iterations_means_no_reflection(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT nope FROM orders"), sql("SELECT 1"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=0)) as (http, _):
        answer = (await post_ask(http, "What is nope?")).json()
    assert len(answer["attempts"]) == 1 and answer["status"] == "failed" and len(llm.requests) == 1


async def test_time_budget_is_respected(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    # Two attempts answer at once, the third reflection never does: the budget (not a reply that a loaded
    # machine may deliver early or late) ends the loop, with attempts made and iterations to spare.
    script(llm, sql("SELECT nope_0 FROM orders"), sql("SELECT nope_1 FROM orders"), Reply(hang=True))
    settings = ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=10, time_budget_s=4.0,
                            llm={"timeout_s": 60.0})
    async with gateway(settings) as (http, _):
        response = await post_ask(http, "What is nope?")
    answer = response.json()
    assert response.status_code == 200 and answer["stop_reason"] == "time_budget"
    assert 1 < len(answer["attempts"]) < 11 and answer["status"] == "failed"


async def test_repeated_sql_stops_the_loop(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT name FROM regions WHERE code = 'weu'"),
           sql("select name\n  from REGIONS -- same thing\n where code = 'weu';"), sql("SELECT 'never asked'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "What is the name of the region weu?")).json()
    first, second = answer["attempts"]
    assert codes(second) == ["repeated_sql"] and second["row_count"] is None and second["timings"]["db_ms"] == 0
    assert answer["stop_reason"] == "repeated_sql" and len(llm.requests) == 2
    # The model saw the finding and kept its SQL: the answer stands, upheld, with the doubt in its findings.
    assert answer["status"] == "ok" and answer["sql"] == "SELECT name FROM regions WHERE code = 'weu'"
    assert first["upheld"] is True and "upheld" not in second
    assert [f["code"] for f in answer["findings"]] == ["empty_result"]


async def test_a_literal_change_is_not_a_repeat(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT name FROM regions WHERE code = 'weu'"), sql("SELECT name FROM regions WHERE code = 'WEU'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "What is the name of the region weu?")).json()
    assert answer["status"] == "ok" and answer["rows"] == [["Western Europe"]]


async def test_a_reflection_never_makes_the_answer_worse(demo_dsn: str, llm: ScriptedLLM,
                                                         dirs: dict[str, Path]) -> None:
    # An empty result is a better answer than an error: the loop keeps the best attempt, not the last.
    script(llm, sql("SELECT name FROM regions WHERE code = 'weu'"), sql("SELECT nme FROM regions"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=1)) as (http, _):
        answer = (await post_ask(http, "What is the name of the region weu?")).json()
    assert [codes(a) for a in answer["attempts"]] == [["empty_result"], ["exec_error"]]
    assert answer["status"] == "suspicious" and answer["sql"] == "SELECT name FROM regions WHERE code = 'weu'"
    assert answer["columns"] == [{"name": "name", "type": "text"}]


async def test_the_heap_is_frozen_once_a_gateway_opened(demo_dsn: str, llm: ScriptedLLM,
                                                        dirs: dict[str, Path]) -> None:
    # gateway.service freezes the start-up heap (gc.freeze) so that generation-2 collections under load do
    # not walk it; frozen objects are still freed by reference counting, so the gateway works as before.
    import gc

    script(llm, sql("SELECT count(*) AS n FROM orders"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        assert gc.get_freeze_count() > 10_000
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 200 and response.json()["status"] == "ok"
