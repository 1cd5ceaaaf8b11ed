"""``eval replay``: the verified set under the configuration in force and under a change (another model, other
rules), with what was right before and is wrong now, a reason per question, cost, and suspect references."""

from __future__ import annotations

import io
import json
from pathlib import Path

from gateway.eval.replay_session import REGRESSED, replay_session
from gateway.magic.verified import load_verified
from gateway.store import Store, examples, regressions, templates
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.eval.helpers import eval_settings, is_generation, sql

VERIFIED = {  # question: (reference, what the other model answers)
    "How many regions are there?": ("SELECT count(*) FROM regions", "SELECT count(*) FROM regions"),
    "How many product categories are there?": ("SELECT count(*) FROM categories",
                                               "SELECT count(*) + 1 FROM categories"),
    "List the region codes.": ("SELECT code FROM regions", "SELECT code FROM regions"),
    "Name one product.": ("SELECT name FROM products LIMIT 1", "SELECT name FROM products ORDER BY name DESC LIMIT 1"),
    "How many orders were placed in the last 30 days?": (
        "SELECT count(*) FROM orders WHERE ordered_at > now() - interval '30 days'",
        "SELECT count(*) FROM orders WHERE ordered_at > now() - interval '31 days'"),
}


def script(llm: ScriptedLLM) -> None:
    ordered = sorted(VERIFIED, key=len, reverse=True)

    def rule(request: LLMRequest) -> str | None:
        asked = request.last_user.split("## Question", 1)[-1]  # not the few-shot examples above it
        question = next((q for q in ordered if q in asked), None)
        if question is None or not is_generation(request):
            return None
        reference, other = VERIFIED[question]
        return sql(other if request.body.get("model") == "other-model" else reference)
    llm.add(rule)


async def seed(store_dsn: str, demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines", store_dsn=store_dsn)
    store = await Store.open(settings.store)
    try:
        for question, (reference, _) in VERIFIED.items():
            await examples.add(store.pool, database="demo", question=question, sql=reference, source="dba",
                               proposed_by="dba")
    finally:
        await store.close()


async def test_another_model_that_breaks_a_question_is_reported_with_reason_cost_and_suspects(
        demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    script(llm)
    (tmp_path / "guidelines").mkdir()
    await seed(fresh_db, demo_dsn, llm, tmp_path)
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines", store_dsn=fresh_db)
    out = io.StringIO()
    status = await replay_session(settings, databases=["demo"], model="other-model", out=out,
                                  json_path=tmp_path / "report.json")
    text = out.getvalue()
    report = json.loads((tmp_path / "report.json").read_text())
    assert status == REGRESSED, text
    assert report["counts"] == {"replayed": 5, "regressed": 1, "fixed": 0, "kept": 2, "still_wrong": 0,
                                "suspect": 2}
    (regression,) = report["regressions"]
    assert regression["question"] == "How many product categories are there?"
    assert regression["reason"] == "wrong_values"
    assert (regression["before_sql"], regression["after_sql"]) == VERIFIED[regression["question"]]
    suspects = {i["question"]: i["suspect"] for i in report["items"] if i["verdict"] == "suspect"}
    assert suspects == {"Name one product.": "nondeterministic",
                        "How many orders were placed in the last 30 days?": "time_dependent"}
    assert report["cost"]["after"]["llm_calls"] == 5 and report["cost"]["after"]["completion_tokens"] > 0
    assert "model other-model" in report["after"]
    assert "reason: wrong_values" in text and "before: SELECT count(*) FROM categories" in text
    assert "suspect references (not counted):" in text
    # stored, without a guideline version (a model change)
    store = await Store.open(settings.store)
    try:
        stored = await store.pool.fetch("SELECT subject, regressed, passed, guideline_version FROM regression_reports")
        found = await regressions.get(store.pool, int(text.rsplit("report ", 1)[1].split()[0]))
    finally:
        await store.close()
    assert [tuple(r) for r in stored] == [("model other-model", 1, False, None)]
    assert found is not None and found.report["regressions"] == report["regressions"]


async def test_a_rules_change_that_blocks_a_verified_question_is_a_regression_blocked(
        demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    script(llm)
    (tmp_path / "guidelines").mkdir()
    await seed(fresh_db, demo_dsn, llm, tmp_path)
    rules = tmp_path / "new-rules"
    rules.mkdir()
    (rules / "demo.yaml").write_text("tables:\n  categories:\n    hidden: true\n")
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines", store_dsn=fresh_db)
    out = io.StringIO()
    status = await replay_session(settings, databases=["demo"], rules_dir=rules, out=out,
                                  json_path=tmp_path / "report.json")
    report = json.loads((tmp_path / "report.json").read_text())
    assert status == REGRESSED, out.getvalue()
    assert [(r["question"], r["reason"]) for r in report["regressions"]] == [
        ("How many product categories are there?", "blocked")]


async def test_nothing_to_replay_is_a_clear_refusal(demo_dsn: str, fresh_db: str, llm: ScriptedLLM,
                                                    tmp_path: Path) -> None:
    (tmp_path / "guidelines").mkdir()
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines", store_dsn=fresh_db)
    assert await replay_session(settings, databases=["demo"], model="other-model", out=io.StringIO()) == 2


async def test_a_reference_the_current_policy_blocks_is_suspect_not_a_regression(
        demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    script(llm)
    (tmp_path / "guidelines").mkdir()
    await seed(fresh_db, demo_dsn, llm, tmp_path)
    rules = tmp_path / "rules-in-force"
    rules.mkdir()
    (rules / "demo.yaml").write_text("tables:\n  categories:\n    hidden: true\n")
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines", store_dsn=fresh_db, rules_dir=rules)
    out = io.StringIO()
    status = await replay_session(settings, databases=["demo"], model="other-model", out=out,
                                  json_path=tmp_path / "report.json")
    report = json.loads((tmp_path / "report.json").read_text())
    verdicts = {i["question"]: (i["verdict"], i["suspect"]) for i in report["items"]}
    assert verdicts["How many product categories are there?"] == ("suspect", "reference_blocked")
    assert status == 0 and report["regressions"] == [], out.getvalue()


async def test_a_template_is_replayed_and_a_rules_change_hiding_its_column_is_a_regression(
        demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    shipped = "SELECT count(*) FROM orders WHERE status = 'shipped'"
    # Under the new rules the template no longer applies (it reads a hidden column): the LLM answers instead.
    llm.add(lambda request: sql(shipped) if "How many orders are shipped" in request.last_user
            and is_generation(request) else None)
    (tmp_path / "guidelines").mkdir()
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines", store_dsn=fresh_db)
    store = await Store.open(settings.store)
    try:
        await templates.add(store.pool, name="orders_in_status", database="demo", description="",
                            sql="SELECT count(*) AS orders FROM orders WHERE status = $1",
                            parameters=[{"name": "status", "column": "orders.status", "type": "text",
                                         "default": "shipped"}],
                            questions=["How many orders are {status}"], example_id=None, created_by="dba")
        (item,) = await load_verified(store.pool, ["demo"], limit=10)
    finally:
        await store.close()
    # asked as a person would, answered by the reference with the default written in (no LLM involved)
    assert (item.key, item.question) == ("template:orders_in_status", "How many orders are shipped")
    assert item.sql == "SELECT count(*) AS orders FROM orders WHERE status = 'shipped'"
    rules = tmp_path / "new-rules"
    rules.mkdir()
    (rules / "demo.yaml").write_text("tables:\n  orders:\n    columns:\n      status: {hidden: true}\n")
    out = io.StringIO()
    status = await replay_session(settings, databases=["demo"], rules_dir=rules, out=out,
                                  json_path=tmp_path / "report.json")
    report = json.loads((tmp_path / "report.json").read_text())
    assert status == REGRESSED, out.getvalue()
    (regression,) = report["regressions"]
    assert (regression["question"], regression["reason"]) == ("How many orders are shipped", "blocked")
    # before: the template answered (its SQL, no LLM); after: the LLM's SQL, refused
    assert regression["before_sql"] == "SELECT count(*) AS orders FROM orders WHERE status = $1"
    assert regression["after_sql"] == shipped
    assert sum(is_generation(r) for r in llm.requests) == 1
