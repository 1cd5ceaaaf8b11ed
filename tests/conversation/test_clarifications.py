"""Clarifying questions: an ambiguous question answers `needs_clarification` (nothing runs), the user's reply in
the same conversation resolves it, and `ask.clarifications = false` turns the offer off. Scripted LLM over
real HTTP, real store and demo database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from gateway.pipeline import prompts
from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import gateway, is_reflection, script, sql
from tests.conversation.conftest import conv_settings
from tests.conversation.test_conversations import carried, generations

CLARIFY = ("<thinking>revenue could mean two things</thinking>\n<clarify><question>Do you mean revenue by the "
           "customer's region or by the sales rep's region?</question><option>customer region</option>"
           "<option>sales rep region</option></clarify>")
BY_CUSTOMER_REGION = ("SELECT r.name AS region, sum(o.total_amount) AS revenue FROM orders o "
                      "JOIN customers c USING (customer_id) JOIN regions r ON r.region_id = c.region_id "
                      "GROUP BY r.name ORDER BY r.name")


async def ask(http: httpx.AsyncClient, question: str, conversation_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"question": question, "database": "demo"}
    if conversation_id:
        body["conversation_id"] = conversation_id
    response = await http.post("/v1/ask", json=body, headers={"X-Client-Id": "carol"})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_a_clarification_round_trip(demo_dsn: str, store_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    script(llm, CLARIFY)
    script(llm, sql(BY_CUSTOMER_REGION))
    async with gateway(conv_settings(demo_dsn, store_dsn, llm, tmp_path)) as (http, state):
        asked = await ask(http, "Revenue by region?")
        resolved = await ask(http, "customer region", asked["conversation_id"])
        feedback = await http.post("/v1/feedback", headers={"X-Client-Id": "carol"},
                                   json={"request_id": asked["request_id"], "verdict": "correct"})
        assert state.store is not None
        stored = await state.store.pool.fetch(
            "SELECT n, status, sql, clarification FROM conversation_turns WHERE conversation_id = $1 ORDER BY n",
            asked["conversation_id"])
    assert asked["status"] == "needs_clarification" and asked["stop_reason"] == "clarification"
    assert asked["clarification"] == {
        "question": "Do you mean revenue by the customer's region or by the sales rep's region?",
        "options": ["customer region", "sales rep region"]}
    assert asked["sql"] is None and asked["rows"] == [] and asked["findings"] == []
    assert [a["source"] for a in asked["attempts"]] == ["generation"] and asked["attempts"][0]["sql"] is None
    assert asked["attempts"][0]["tokens"]["prompt"] > 0

    assert resolved["status"] == "ok" and resolved["sql"] == BY_CUSTOMER_REGION
    assert resolved["conversation_id"] == asked["conversation_id"] and resolved["clarification"] is None
    opening, reply = generations(llm)
    assert prompts.CLARIFY_OFFER in opening.last_user
    earlier = carried(reply)
    assert "Question: Revenue by region?" in earlier
    assert "The gateway asked the user: Do you mean revenue by the customer's region" in earlier
    assert "Options offered: customer region; sales rep region" in earlier
    assert "## Question\ncustomer region" in reply.last_user
    assert prompts.CLARIFY_OFFER not in reply.last_user  # one round at a time: the reply gets SQL
    assert [(r["n"], r["status"], r["sql"] is None) for r in stored] == [
        (1, "needs_clarification", True), (2, "ok", False)]
    assert stored[0]["clarification"]["options"] == ["customer region", "sales rep region"]
    assert feedback.status_code == 201 and feedback.json()["example_id"] is None  # no SQL, nothing to propose


async def test_a_second_clarification_in_a_row_counts_as_no_sql(demo_dsn: str, store_dsn: str, llm: ScriptedLLM,
                                                                 tmp_path: Path) -> None:
    script(llm, CLARIFY)
    script(llm, CLARIFY, sql(BY_CUSTOMER_REGION))  # asks again on the reply: not offered, so reflected on
    async with gateway(conv_settings(demo_dsn, store_dsn, llm, tmp_path)) as (http, _):
        asked = await ask(http, "Revenue by region?")
        resolved = await ask(http, "the first one", asked["conversation_id"])
    assert resolved["status"] == "ok" and resolved["clarification"] is None
    assert [f["code"] for f in resolved["attempts"][0]["findings"]] == ["no_sql"]
    assert resolved["attempts"][1]["source"] == "reflection" and resolved["sql"] == BY_CUSTOMER_REGION


async def test_policy_off_neither_offers_nor_accepts_a_clarification(demo_dsn: str, store_dsn: str,
                                                                     llm: ScriptedLLM, tmp_path: Path) -> None:
    script(llm, CLARIFY, sql(BY_CUSTOMER_REGION))
    async with gateway(conv_settings(demo_dsn, store_dsn, llm, tmp_path, clarifications=False)) as (http, _):
        answer = await ask(http, "Revenue by region?")
    assert answer["status"] == "ok" and answer["clarification"] is None and answer["sql"] == BY_CUSTOMER_REGION
    first = answer["attempts"][0]
    assert first["sql"] is None and [f["code"] for f in first["findings"]] == ["no_sql"]
    (generation,) = generations(llm)
    assert prompts.CLARIFY_OFFER not in generation.last_user and "<clarify>" not in generation.text
    (reflection,) = [r for r in llm.requests if is_reflection(r)]
    assert "<clarify>" not in reflection.text  # the question is not SQL, and is not shown as such either


async def test_sql_next_to_a_clarify_block_wins(demo_dsn: str, store_dsn: str, llm: ScriptedLLM,
                                                tmp_path: Path) -> None:
    script(llm, CLARIFY + "\n" + sql("SELECT count(*) AS n FROM orders"))
    async with gateway(conv_settings(demo_dsn, store_dsn, llm, tmp_path)) as (http, _):
        answer = await ask(http, "How many orders?")
    assert answer["status"] == "ok" and answer["clarification"] is None and answer["row_count"] == 1


async def test_hidden_names_are_masked_in_a_clarification(demo_dsn: str, store_dsn: str, llm: ScriptedLLM,
                                                          tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir(exist_ok=True)
    (tmp_path / "rules" / "demo.yaml").write_text("tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
    script(llm, "<clarify><question>Base salary or total pay?</question><option>salary</option>"
                "<option>total pay</option></clarify>")
    async with gateway(conv_settings(demo_dsn, store_dsn, llm, tmp_path)) as (http, state):
        asked = await ask(http, "What do employees earn?")
        assert state.store is not None
        stored = await state.store.pool.fetchval(
            "SELECT clarification::text FROM conversation_turns WHERE conversation_id = $1", asked["conversation_id"])
    assert asked["clarification"] == {"question": "Base [hidden] or total pay?", "options": ["[hidden]", "total pay"]}
    assert "salary" not in stored.lower()
