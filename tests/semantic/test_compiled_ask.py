"""Metric questions answered by compilation through ``POST /v1/ask``: the scripted LLM picks the metric
query (structured output), the gateway writes the SQL from the model, checks and runs it, and says so."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import yaml

from gateway.semantic.prompts import PICK_SYSTEM
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_generation, post_ask, script, sql

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = yaml.safe_load((ROOT / "gateway" / "semantic" / "data" / "demo_metric_questions.yaml").read_text())


def is_pick(request: LLMRequest) -> bool:
    return request.system == PICK_SYSTEM


def normal(rows: list[Any], ordered: bool) -> list[tuple[Any, ...]]:
    out = [tuple(round(float(v), 6) if isinstance(v, Decimal | float) or _numeric(v) else str(v) for v in row)
           for row in rows]
    return out if ordered else sorted(out, key=repr)


def _numeric(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, str) or any(ch.isdigit() for ch in value) and "-" not in value[1:]


async def test_every_demo_metric_question_is_answered_by_compilation(demo_dsn: str, llm: ScriptedLLM,
                                                                    dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, dirs, llm.base_url)
    settings.semantic_dir = ROOT / "semantic"
    conn = await asyncpg.connect(demo_dsn)
    same = 0
    try:
        async with gateway(settings) as (http, _):
            for item in QUESTIONS:
                llm.requests.clear()
                llm.add(lambda r, q=item["query"]: json.dumps({"metric_query": q}) if is_pick(r) else None, times=1)
                response = await post_ask(http, item["question"], max_rows=1000)
                answer = response.json()
                assert response.status_code == 200, response.text
                assert answer["status"] == "ok" and answer["compiled_from"] == "semantic_model", (item["id"], answer)
                (attempt,) = answer["attempts"]
                assert attempt["source"] == "semantic_model" and attempt["metric_query"]["metrics"]
                assert not any(is_generation(r) for r in llm.requests)  # no SQL generation at all
                (pick,) = [r for r in llm.requests if is_pick(r)]
                assert pick.body["response_format"]["type"] == "json_schema"  # structured output
                want = await conn.fetch(item["sql"])
                ordered = item.get("ordered", False)
                assert normal(answer["rows"], ordered) == normal(want, ordered), item["id"]
                same += 1
    finally:
        await conn.close()
    assert same == len(QUESTIONS) >= 30


async def test_a_question_the_model_cannot_answer_goes_to_generation(demo_dsn: str, llm: ScriptedLLM,
                                                                    dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, dirs, llm.base_url)
    settings.semantic_dir = ROOT / "semantic"
    async with gateway(settings) as (http, _):
        for reply in ('{"metric_query": null}', '{"metric_query": {"metrics": ["profit"]}}', "not json"):
            llm.requests.clear()
            llm.add(lambda r, reply=reply: reply if is_pick(r) else None, times=1)
            script(llm, sql("SELECT count(*) AS order_count FROM orders"))
            answer = (await post_ask(http, "How many orders, the revenue question aside?")).json()
            assert [a["source"] for a in answer["attempts"]] == ["generation"], reply
            assert "compiled_from" not in answer or answer["compiled_from"] is None
            # The generation prompt is grounded in the metrics the question touches.
            generation = next(r for r in llm.requests if is_generation(r))
            assert "revenue (simple): Order totals" in generation.last_user
            assert "Definition: SUM(orders.total_amount) FILTER(WHERE orders.status <> 'cancelled')" in \
                generation.last_user


async def test_without_a_semantic_model_nothing_changes(demo_dsn: str, llm: ScriptedLLM,
                                                      dirs: dict[str, Path]) -> None:
    script(llm, sql("SELECT sum(total_amount) AS revenue FROM orders"))
    async with gateway(ask_settings(demo_dsn, dirs, llm.base_url)) as (http, _):
        answer = (await post_ask(http, "What is the revenue?")).json()
    assert [a["source"] for a in answer["attempts"]] == ["generation"] and answer["status"] == "ok"
    assert not any(is_pick(r) for r in llm.requests)
    assert "Semantic model" not in next(r for r in llm.requests if is_generation(r)).last_user


async def test_value_synonyms_become_value_hints_but_never_for_hidden_columns(
        demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "semantic"
    folder.mkdir()
    text = (ROOT / "semantic" / "demo.yaml").read_text()
    marker = "        synonyms: [customer segment]\n"
    assert marker in text
    (folder / "demo.yaml").write_text(text.replace(marker, marker + "        values: {Enterprise: [big accounts]}\n"))
    (dirs["rules"] / "demo.yaml").write_text("tables:\n  customers:\n    columns:\n      segment: {hidden: true}\n")
    settings = ask_settings(demo_dsn, dirs, llm.base_url, compile_metrics=False)
    settings.semantic_dir = folder
    script(llm, sql("SELECT sum(total_amount) FILTER (WHERE status <> 'cancelled') AS revenue FROM orders"))
    async with gateway(settings) as (http, _):
        answer = (await post_ask(http, "Revenue from NA customers of big accounts bought online")).json()
    assert answer["status"] == "ok", answer
    prompt = next(r for r in llm.requests if is_generation(r)).last_user
    assert "'NA' likely means regions.name = 'North America'" in prompt
    assert "'online' likely means orders.channel = 'web'" in prompt
    assert "Values: 'web' (also online, website, web shop)" in prompt  # the catalog, for the model
    assert "Enterprise" not in prompt and "segment" not in prompt  # a hidden column's values and name
