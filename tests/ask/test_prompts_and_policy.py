"""What the LLM is shown: never a hidden column; the guideline only in the scenarios the policy names."""

from __future__ import annotations

from pathlib import Path

from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import (
    GUIDELINE_MARKER,
    ask_settings,
    gateway,
    is_generation,
    is_judge,
    is_reflection,
    post_ask,
    script,
    sql,
)


async def test_hidden_columns_never_reach_a_prompt(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    (dirs["rules"] / "demo.yaml").write_text(
        "tables:\n  customers:\n    columns:\n      company_name: {hidden: true}\n"
    )
    # A near-miss makes Postgres suggest the hidden column in its hint; that hint must be dropped.
    script(llm, sql("SELECT compnay_name FROM customers LIMIT 5"),
           sql("SELECT compnay_name AS company FROM customers LIMIT 5"),
           sql("SELECT count(*) AS customers FROM customers WHERE segment = 'Enterprise'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        response = await post_ask(http, "Which company names do our Enterprise customers have, and how many?",
                                  evidence="company means the customer's business")
    answer = response.json()
    assert answer["attempts"][0]["findings"][0]["code"] == "exec_error"
    # Postgres did suggest it in a hint: the sentence is gone ("Perhaps you meant [hidden]" confirms the guess)
    assert answer["attempts"][0]["findings"][0].get("hint") is None, answer["attempts"][0]["findings"][0]
    assert len(llm.requests) >= 2
    for request in llm.requests:
        assert "company_name" not in request.text.lower()
    assert "company_name" not in response.text.lower()


async def test_hidden_column_written_by_the_llm_is_blocked(demo_dsn: str, llm: ScriptedLLM,
                                                           dirs: dict[str, Path]) -> None:
    (dirs["rules"] / "demo.yaml").write_text("tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
    script(llm, sql("SELECT avg(salary) FROM employees"), sql("SELECT count(*) AS n FROM employees"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "How many employees do we have?")).json()
    first = answer["attempts"][0]
    assert first["findings"][0]["code"] == "blocked" and "hidden_column" in first["findings"][0]["codes"]
    assert answer["status"] == "ok"
    generation = next(r for r in llm.requests if is_generation(r))
    assert "salary" not in generation.text.lower()


async def test_guideline_errors_only(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT name FROM regions WHERE code = 'weu'"), sql("SELECT nme FROM regions WHERE code = 'WEU'"),
           sql("SELECT name FROM regions WHERE code = 'WEU'"))
    settings = ask_settings(demo_dsn, dirs, llm.base_url, guideline_scenario="errors_only")
    async with gateway(settings) as (http, _):
        answer = (await post_ask(http, "What is the name of the region weu?")).json()
    reflections = [r for r in llm.requests if is_reflection(r)]
    # After an empty result: no guideline; after an execution error: the guideline.
    assert [GUIDELINE_MARKER in r.text for r in reflections] == [False, True]
    assert [a["guideline_applied"] for a in answer["attempts"]] == [False, False, True]
    assert answer["guideline_version"] == "default" and answer["guideline_applied"]
    assert not any(GUIDELINE_MARKER in r.text for r in llm.requests if is_generation(r))


async def test_guideline_on_suspicious_results(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT name FROM regions WHERE code = 'weu'"), sql("SELECT name FROM regions WHERE code = 'WEU'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, guideline_scenario="suspicious")) as (http, _):
        answer = (await post_ask(http, "What is the name of the region weu?")).json()
    (reflection,) = [r for r in llm.requests if is_reflection(r)]
    assert GUIDELINE_MARKER in reflection.text and answer["status"] == "ok"


async def test_guideline_on_all_sql_reviews_a_passing_answer(demo_dsn: str, llm: ScriptedLLM,
                                                             dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT count(*) AS n FROM regions"), sql("SELECT count(*) AS n FROM regions"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, guideline_scenario="all")) as (http, _):
        answer = (await post_ask(http, "How many regions are there?")).json()
    (review,) = [r for r in llm.requests if is_reflection(r)]
    assert GUIDELINE_MARKER in review.text and "passed validation" in review.text
    # The review confirmed the SQL: the loop stops and the first (passing) attempt is the answer.
    assert answer["status"] == "ok" and answer["stop_reason"] == "repeated_sql"
    assert answer["attempts"][0]["passed"] and answer["sql"] == "SELECT count(*) AS n FROM regions"


async def test_llm_judge_can_send_a_result_back(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    llm.add(lambda r: "<verdict>no</verdict><reason>cancelled orders were counted</reason>" if is_judge(r) else None,
            times=1)
    llm.add(lambda r: "<verdict>yes</verdict>" if is_judge(r) else None, times=1)
    script(llm, sql("SELECT count(*) AS n FROM orders"),
           sql("SELECT count(*) AS n FROM orders WHERE status <> 'cancelled'"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, llm_judge=True)) as (http, _):
        answer = (await post_ask(http, "How many orders did customers actually place?")).json()
    first, second = answer["attempts"]
    assert [f["code"] for f in first["findings"]] == ["llm_judge"]
    assert first["findings"][0]["message"] == "cancelled orders were counted"
    assert second["passed"] and answer["status"] == "ok"
    assert sum(is_judge(r) for r in llm.requests) == 2


async def test_model_per_database_and_documented_problems(demo_dsn: str, llm: ScriptedLLM,
                                                          dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT count(*) AS n FROM regions"))
    settings = ask_settings(demo_dsn, dirs, llm.base_url, model="sales-sql-model", temperature=0.3)
    async with gateway(settings) as (http, _):
        answer = (await post_ask(http, "How many regions are there?")).json()
        spec = (await http.get("/openapi.json")).json()
    assert answer["status"] == "ok"
    assert llm.requests[0].body["model"] == "sales-sql-model" and llm.requests[0].body["temperature"] == 0.3
    responses = spec["paths"]["/v1/ask"]["post"]["responses"]
    documented = " ".join(r.get("description", "") for r in responses.values())
    for code in ("llm_not_configured", "llm_unavailable", "llm_bad_output", "deadline_exceeded", "unknown_database"):
        assert f"`{code}`" in documented
    assert "text/event-stream" in responses["200"]["content"]
