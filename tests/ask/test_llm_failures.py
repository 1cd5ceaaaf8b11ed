"""LLM down, slow, or answering garbage: a clear problem response or a failed status, never a 500."""

from __future__ import annotations

import socket
from pathlib import Path

from gateway.testing.scripted_llm import Reply, ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_reflection, post_ask, script, sql


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


async def test_no_llm_configured_answers_a_problem_and_sql_still_works(demo_dsn: str,
                                                                       dirs: dict[str, Path]) -> None:
    async with gateway(ask_settings(demo_dsn, dirs, None)) as (http, state):
        assert state.llm is None
        response = await post_ask(http, "How many orders are there?")
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "llm_not_configured" and "llm.model" in response.json()["detail"]
        sql_response = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT count(*) FROM orders"})
        assert sql_response.status_code == 200


async def test_unknown_database_is_a_problem(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        response = await http.post("/v1/ask", json={"question": "hi", "database": "nope"})
    assert response.status_code == 404 and response.json()["code"] == "unknown_database"
    assert llm.requests == []


async def test_llm_server_down(demo_dsn: str, dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, dirs, f"http://127.0.0.1:{closed_port()}/v1", llm={"max_retries": 1})
    async with gateway(settings) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 503 and response.json()["code"] == "llm_unavailable"
    assert response.headers["retry-after"] == "5"


async def test_llm_answering_500s(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    llm.default = Reply(status=500)
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, llm={"max_retries": 2})) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 503 and response.json()["code"] == "llm_unavailable"
    assert len(llm.requests) == 3  # the first call and two retries, then a clear answer


async def test_a_transient_500_is_retried(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    llm.add_reply(Reply(status=503), times=1)
    script(llm, sql("SELECT count(*) AS n FROM orders"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, llm={"max_retries": 2})) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 200 and response.json()["status"] == "ok" and len(llm.requests) == 2


async def test_slow_llm_times_out(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    llm.default = Reply(sql("SELECT 1"), delay_s=3)
    settings = ask_settings(demo_dsn, dirs, llm.base_url, llm={"timeout_s": 0.3, "max_retries": 1})
    async with gateway(settings) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 503 and response.json()["code"] == "llm_unavailable"
    assert "timeout" in response.json()["detail"].lower()


async def test_slow_llm_beyond_the_time_budget(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    # The call never answers (the budget ends it); 2 s leaves the first call ample time to go out on a loaded
    # machine, where a budget spent before it would leave nothing to count.
    llm.default = Reply(hang=True)
    settings = ask_settings(demo_dsn, dirs, llm.base_url, time_budget_s=2.0, llm={"timeout_s": 10, "max_retries": 3})
    async with gateway(settings) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 504 and response.json()["code"] == "deadline_exceeded"
    assert len(llm.requests) == 1  # no retry can fit in what is left of the budget


async def test_malformed_completion_body(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    llm.default = Reply(raw_body="<html>bad gateway</html>")
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    assert response.status_code == 502 and response.json()["code"] == "llm_bad_output"


async def test_answers_without_sql_end_in_llm_bad_output(demo_dsn: str, llm: ScriptedLLM,
                                                         dirs: dict[str, Path]) -> None:
    llm.default = "I am sorry, I cannot help with that."
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, max_iterations=2)) as (http, _):
        response = await post_ask(http, "How many orders are there?")
    problem = response.json()
    assert response.status_code == 502 and problem["code"] == "llm_bad_output"
    assert [a["findings"][0]["code"] for a in problem["attempts"]] == ["no_sql"] * 3


async def test_garbage_then_sql_is_reflected(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path]) -> None:
    script(llm, "Let me think about revenue... it depends.", "```sql\nSELECT count(*) AS n FROM orders;\n```")
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "How many orders are there?")).json()
    assert [a["findings"][0]["code"] if a["findings"] else None for a in answer["attempts"]] == ["no_sql", None]
    assert answer["status"] == "ok" and answer["sql"] == "SELECT count(*) AS n FROM orders"
    reflection = next(r for r in llm.requests if is_reflection(r))
    assert "no SQL could be read" in reflection.last_user


async def test_llm_failing_during_reflection_keeps_the_trace(demo_dsn: str, llm: ScriptedLLM,
                                                             dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT name FROM regions WHERE code = 'weu'"))
    llm.default = Reply(status=500)
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url, llm={"max_retries": 0})) as (http, _):
        response = await post_ask(http, "What is the name of the region weu?")
    answer = response.json()
    assert response.status_code == 200 and answer["status"] == "suspicious"
    assert answer["stop_reason"] == "llm_unavailable" and len(answer["attempts"]) == 1
