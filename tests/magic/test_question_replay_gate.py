"""The activation gate replays whole questions (generation and reflection) on held-out verified examples when
there are enough of them, and falls back to one reflection per held-out correction when there are not.

The scripted model gets every question wrong at first (an error), and on reflection answers right only when
a given guideline is in the prompt: so the candidate's guideline decides the outcome of whole questions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gateway.store import examples, guidelines
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.ask.helpers import is_generation, is_reflection, sql
from tests.magic.helpers import GUIDELINE_TAG, case, gateway, guideline_text, settings_for

EXAMPLES = (1, 2, 3)


def asked(request: LLMRequest) -> int:
    """The k of ``case(k)`` being asked (the question section, not the few-shot examples)."""
    section = request.last_user.split("## Question", 1)[1]
    return int(section.split("customer ", 1)[1].split(" ", 1)[0])


def script(llm: ScriptedLLM, right_when: Callable[[str], bool]) -> None:
    llm.add(lambda r: sql("SELECT count(*) FROM no_such_table") if is_generation(r) else None)
    llm.add(lambda r: sql(case(asked(r)).correct_sql if right_when(r.text) else case(asked(r)).incorrect_sql)
            if is_reflection(r) else None)


async def seed(state: object, n: int = len(EXAMPLES)) -> int:
    store = state.store  # type: ignore[attr-defined]
    for k in EXAMPLES[:n]:
        await examples.add(store.pool, database="demo", question=case(k).question, sql=case(k).correct_sql,
                           source="dba", proposed_by="dba")
    async with store.transaction() as conn:
        return await guidelines.add_candidate(conn, text=guideline_text(1), parent=None, provenance={},
                                              database="demo")


async def test_a_candidate_that_answers_more_questions_right_is_activated(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script(llm, lambda text: GUIDELINE_TAG in text)  # the candidate's reminders fix the questions
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, gate_question_min_examples=3)
    async with gateway(settings) as (http, state):
        version = await seed(state)
        activated = await http.post(f"/v1/guidelines/{version}/activate", json={})
        audit_rows = await state.store.pool.fetchval("SELECT count(*) FROM request_audit")
        stored_corrections = await state.store.pool.fetchval("SELECT count(*) FROM corrections")
        in_force = (await state.guidelines.active("demo")).version
    assert activated.status_code == 200, activated.text
    evaluation = activated.json()["evaluation"]
    assert evaluation["method"] == "question_replay" and evaluation["passed"] is True
    assert (evaluation["examples"], evaluation["candidate_correct"], evaluation["baseline_correct"]) == (3, 3, 0)
    assert evaluation["baseline_versions"] == ["default"] and evaluation["database"] == "demo"
    assert {i["candidate_status"] for i in evaluation["items"]} == {"ok"}
    assert all(i["candidate_attempts"] >= 2 for i in evaluation["items"])  # generation failed, reflection fixed it
    assert in_force == f"v{version}"
    # three questions, two guidelines: a generation and a reflection each; the replays left no trace
    assert len([r for r in llm.requests if is_generation(r)]) == 6
    assert audit_rows == 0 and stored_corrections == 0
    # the example being replayed was never shown to the model as its own few-shot answer
    for request in llm.requests:
        if is_generation(request):
            k = asked(request)
            assert case(k).correct_sql not in request.text


async def test_a_candidate_that_breaks_questions_is_refused_with_the_evaluation_unless_forced(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script(llm, lambda text: "FILE-GUIDELINE" in text)  # only the guideline in force fixes them
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, gate_question_min_examples=3)
    async with gateway(settings) as (http, state):
        version = await seed(state)
        refused = await http.post(f"/v1/guidelines/{version}/activate", json={})
        still = (await state.guidelines.active("demo")).version
        forced = await http.post(f"/v1/guidelines/{version}/activate", json={"force": True})
        events = (await http.get("/v1/guidelines/events", params={"database": "demo"})).json()["events"]
    assert refused.status_code == 409 and refused.json()["code"] == "guideline_gate_failed"
    evaluation = refused.json()["evaluation"]
    assert evaluation["method"] == "question_replay" and evaluation["passed"] is False
    assert (evaluation["candidate_correct"], evaluation["baseline_correct"]) == (0, 3)
    assert still == "default"
    assert forced.status_code == 200 and forced.json()["evaluation"]["passed"] is False  # the refusal stays on record
    assert [(e["action"], e["detail"]["forced"]) for e in events] == [("activate", True)]


async def test_with_too_few_examples_the_gate_replays_reflections_and_says_why(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script(llm, lambda text: GUIDELINE_TAG in text)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, gate_question_min_examples=3)
    async with gateway(settings) as (http, state):
        version = await seed(state, n=2)
        refused = await http.post(f"/v1/guidelines/{version}/activate", json={})
    evaluation = refused.json()["evaluation"]
    assert evaluation["method"] == "reflection_replay"
    assert "2 held-out verified example(s)" in evaluation["note"] and "gate_question_min_examples" in evaluation["note"]
    # no held-out corrections either: today's gate refuses, as it did before
    assert refused.json()["code"] == "guideline_gate_failed" and evaluation["examples"] == 0
    # the accuracy gate replayed no question; the regression replay did (both verified questions, under both
    # guidelines), and found none broken (the candidate fixes them)
    assert len([r for r in llm.requests if is_generation(r)]) == 4
    assert evaluation["regressed"] == 0


async def test_examples_the_candidate_learnt_from_are_not_held_out(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path)
    async with gateway(settings) as (_, state):
        store = state.store
        assert store is not None
        await seed(state)
        taught = await store.pool.fetchval(
            "INSERT INTO corrections (database, question, incorrect_sql, corrected_sql, source, verified) "
            "VALUES ('demo', $1, 'SELECT 1', 'SELECT 2', 'dba', true) RETURNING id",
            "  how many orders did customer 2 CANCEL? ")
        held = await examples.held_out(store.pool, ["demo"], learnt_from=[taught], limit=10)
        other_db = await examples.held_out(store.pool, ["shop"], learnt_from=[], limit=10)
    assert sorted(e.question for e in held) == [case(1).question, case(3).question]
    assert other_db == []
