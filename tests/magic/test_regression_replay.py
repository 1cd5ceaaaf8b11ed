"""Regression replay before a guideline activation (issue 29): a candidate that breaks one verified question
is refused with ``guideline_regressed``, the refusal names the question, the reason and the SQL before and
after, the report is stored and readable, a suspect reference is flagged and not counted, and a forced
activation goes through and is audited with the report it overrode.

The guideline reaches the model in the reflection (the ask policy's default), so the scripted model first
answers with an error, then, reflecting, answers each verified question with its reference SQL, except under
the candidate guideline (its marker in the prompt), where it answers question 2 with a wrong count and the
question with a LIMIT but no ORDER BY with another row."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway import errors
from gateway.magic.lifecycle import magic_for
from gateway.magic.run import regenerate
from gateway.service import Gateway
from gateway.store import examples, guidelines, regressions
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.ask.helpers import is_generation, is_reflection, sql
from tests.magic.helpers import (
    GUIDELINE_TAG,
    MagicScript,
    add_corrections,
    case,
    gateway,
    guideline_text,
    settings_for,
)

ANY_ROW = ("Name one customer id.", "SELECT customer_id FROM customers LIMIT 1",
           "SELECT customer_id FROM customers ORDER BY customer_id DESC LIMIT 1")


def asked(request: LLMRequest) -> str:
    return request.last_user.split("## Question", 1)[1]


def script(llm: ScriptedLLM) -> None:
    def rule(request: LLMRequest) -> str | None:
        if is_generation(request):
            return sql("SELECT count(*) FROM no_such_table")
        if not is_reflection(request):
            return None
        question, candidate = asked(request), GUIDELINE_TAG in request.text
        if ANY_ROW[0] in question:
            return sql(ANY_ROW[2] if candidate else ANY_ROW[1])
        k = int(question.split("customer ", 1)[1].split(" ", 1)[0])
        return sql(case(k).incorrect_sql if candidate and k == 2 else case(k).correct_sql)
    llm.add(rule)


async def seed(state: object) -> int:
    store = state.store  # type: ignore[attr-defined]
    for k in (1, 2, 3):
        await examples.add(store.pool, database="demo", question=case(k).question, sql=case(k).correct_sql,
                           source="dba", proposed_by="dba")
    await examples.add(store.pool, database="demo", question=ANY_ROW[0], sql=ANY_ROW[1], source="dba",
                       proposed_by="dba")
    async with store.transaction() as conn:
        return await guidelines.add_candidate(conn, text=guideline_text(1), parent=None, provenance={},
                                              database="demo")


async def test_a_candidate_that_breaks_one_verified_question_is_refused_and_named_unless_forced(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script(llm)
    # 3 of 4 right is within the accuracy gate's threshold: only the regression replay refuses it
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, gate_question_min_examples=3, gate_threshold=0.5)
    async with gateway(settings) as (http, state):
        version = await seed(state)
        refused = await http.post(f"/v1/guidelines/{version}/activate", json={})
        still = (await state.guidelines.active("demo")).version
        stored = await http.get(f"/v1/guidelines/{version}/regressions")
        audit_rows = await state.store.pool.fetchval("SELECT count(*) FROM request_audit")
        forced = await http.post(f"/v1/guidelines/{version}/activate", json={"force": True})
        events = (await http.get("/v1/guidelines/events", params={"database": "demo"})).json()["events"]
        now = (await state.guidelines.active("demo")).version
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "guideline_regressed" and refused.headers["content-type"].startswith(
        "application/problem+json")
    assert body["regressions"] == [{
        "key": body["regressions"][0]["key"], "database": "demo", "question": case(2).question,
        "reason": "wrong_values", "before_sql": case(2).correct_sql, "after_sql": case(2).incorrect_sql}]
    assert case(2).question in body["detail"] and "wrong_values" in body["detail"]
    assert body["evaluation"]["gate_passed"] is True and body["evaluation"]["passed"] is False
    assert still == "default" and audit_rows == 0
    # the report was stored before the refusal was answered, and reads back whole
    assert stored.status_code == 200, stored.text
    (report,) = stored.json()["reports"]
    assert report["id"] == body["report_id"] and report["guideline_version"] == version
    assert report["regressed"] == 1 and report["passed"] is False
    assert report["counts"] == {"replayed": 4, "regressed": 1, "fixed": 0, "kept": 2, "still_wrong": 0,
                                "suspect": 1}
    items = {i["question"]: i for i in report["report"]["items"]}
    # the LIMIT without ORDER BY changed its row, but its reference is suspect: flagged, not counted
    assert items[ANY_ROW[0]]["verdict"] == "suspect" and items[ANY_ROW[0]]["suspect"] == "nondeterministic"
    assert items[ANY_ROW[0]]["after"]["right"] is False
    assert items[case(1).question]["verdict"] == "kept"
    cost = report["report"]["cost"]
    assert cost["before"]["llm_calls"] == cost["after"]["llm_calls"] == 8  # a generation and a reflection each
    assert cost["after"]["prompt_tokens"] > 0 and cost["after"]["latency_ms_p50"] is not None
    # forcing skips the replay and is audited with the report it overrode
    generations = len([r for r in llm.requests if is_generation(r)])
    assert generations == 8
    assert forced.status_code == 200, forced.text
    assert now == f"v{version}"
    assert [(e["action"], e["detail"]["forced"], e["detail"]["regression_report"]) for e in events] == [
        ("activate", True, body["report_id"])]


async def test_without_regressions_the_candidate_is_activated_and_the_report_says_so(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    llm.add(lambda r: sql(case(int(asked(r).split("customer ", 1)[1].split(" ", 1)[0])).correct_sql)
            if is_generation(r) and "customer " in asked(r) else None)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, gate_question_min_examples=3)
    async with gateway(settings) as (http, state):
        store = state.store
        for k in (1, 2, 3):
            await examples.add(store.pool, database="demo", question=case(k).question, sql=case(k).correct_sql,
                               source="dba", proposed_by="dba")
        async with store.transaction() as conn:
            version = await guidelines.add_candidate(conn, text=guideline_text(1), parent=None, provenance={},
                                                     database="demo")
        activated = await http.post(f"/v1/guidelines/{version}/activate", json={})
        stored = (await http.get(f"/v1/guidelines/{version}/regressions")).json()["reports"]
        events = (await http.get("/v1/guidelines/events", params={"database": "demo"})).json()["events"]
    assert activated.status_code == 200, activated.text
    assert activated.json()["evaluation"]["regressed"] == 0
    async with Gateway(settings) as python_api:  # the Python API reads the same reports
        (found,) = await python_api.regressions(version)
        with pytest.raises(errors.UnknownGuidelineVersion):
            await python_api.regressions(version + 100)
    assert found.passed and found.report["counts"]["kept"] == 3
    assert [(r["passed"], r["counts"]["kept"]) for r in stored] == [(True, 3)]
    assert events[0]["detail"]["regression_report"] == stored[0]["id"]
    # the accuracy gate read the same answers: one generation per question and guideline, no more
    assert len([r for r in llm.requests if is_generation(r)]) == 6


async def test_regressions_of_an_unknown_version_are_a_problem(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path)) as (http, _):
        missing = await http.get("/v1/guidelines/999/regressions")
    assert missing.status_code == 404 and missing.json()["code"] == "unknown_guideline_version"


async def test_the_cli_names_the_regression_refuses_and_forces(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script(llm)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, gate_question_min_examples=3, gate_threshold=0.5)
    async with gateway(settings) as (_, state):
        version = await seed(state)
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'guidelines_dir = "{tmp_path / "guidelines"}"\nrules_dir = "{tmp_path / "rules"}"\n'
        f'[databases.demo]\ndsn = "{demo_dsn}"\n[store]\ndsn = "{fresh_db}"\n'
        f'[llm]\nbase_url = "{llm.base_url}"\nmodel = "scripted-model"\nmax_retries = 0\n'
        '[magic]\nschedule = false\nholdout_every = 0\ngate_question_min_examples = 3\ngate_threshold = 0.5\n'
        '[auth]\nenabled = false\n')

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "OPENAI_"))}
        return subprocess.run([sys.executable, "-m", "gateway", *args, "--config", str(config)],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    refused = cli("guideline", "activate", str(version))
    shown = cli("guideline", "regressions", str(version))
    forced = cli("guideline", "activate", str(version), "--force")
    assert refused.returncode == 1, refused.stderr
    assert "\nguideline_regressed: version" in "\n" + refused.stderr  # after the log lines
    assert (f"  {case(2).question}\n    reason: wrong_values\n    before: {case(2).correct_sql}\n"
            f"    after:  {case(2).incorrect_sql}") in refused.stderr
    assert f"nl2sql-gateway guideline regressions v{version}" in refused.stderr
    assert shown.returncode == 0, shown.stderr
    assert "regressions (right before, wrong now): 1" in shown.stdout and "reason: wrong_values" in shown.stdout
    assert "Name one customer id.: nondeterministic" in shown.stdout
    assert forced.returncode == 0 and f"v{version} is active" in forced.stdout, forced.stderr


async def test_a_regeneration_run_does_not_activate_a_candidate_that_breaks_a_verified_question(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    MagicScript(llm)  # the MAGIC team writes a candidate carrying GUIDELINE_TAG
    regions = ("How many regions are there?", "SELECT count(*) FROM regions", "SELECT count(*) - 1 FROM regions")

    def answer(request: LLMRequest) -> str | None:
        if is_generation(request):
            return sql("SELECT count(*) FROM no_such_table")
        if is_reflection(request) and regions[0] in asked(request):
            return sql(regions[2] if GUIDELINE_TAG in request.text else regions[1])
        return None
    llm.add(answer)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, auto_activate=True, gate_min_examples=0,
                            batch_size=2)
    async with gateway(settings) as (_, state):
        store = state.store
        await examples.add(store.pool, database="demo", question=regions[0], sql=regions[1], source="dba",
                           proposed_by="dba")
        await add_corrections(store, [1, 2])
        report = await regenerate(magic_for(state, store), "threshold")
        stored = await regressions.for_version(store.pool, report.version or 0)
        active = await guidelines.active(store.pool)
    assert report.outcome == "rejected" and active is None, report
    assert report.evaluation is not None and report.evaluation["gate_passed"] is True
    assert [(r["question"], r["reason"]) for r in report.evaluation["regressions"]] == [(regions[0], "wrong_values")]
    (kept,) = stored
    assert kept.actor == f"regeneration run {report.run_id}" and kept.regressed == 1
