"""MAGIC runs against the demo database and a store on a fresh database, with a scripted LLM over HTTP."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from gateway.magic.lifecycle import magic_for
from gateway.magic.run import regenerate
from gateway.settings import StoreSettings
from gateway.store import Store, corrections, guidelines, runs
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM
from tests.magic.helpers import MagicScript, add_corrections, case, fenced, gateway, settings_for


@pytest.mark.parametrize(("feedbacks", "updates"), [(9, 0), (10, 1), (21, 2)])
async def test_every_full_batch_of_ten_updates_the_guideline_once(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path, feedbacks: int, updates: int,
) -> None:
    script = MagicScript(llm)
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path)) as (_, state):
        assert state.store is not None
        ids = await add_corrections(state.store, range(1, feedbacks + 1))
        report = await regenerate(magic_for(state, state.store), activate=False)
        versions = await guidelines.list_all(state.store.pool)
        left = await runs.unused_feedbacks(state.store.pool)

    assert report.outcome == ("candidate" if updates else "no_change"), report
    assert report.counts["feedbacks_kept"] == feedbacks
    assert len(script.calls("guideline")) == updates == report.counts["guideline_updates"]
    assert len(left) == feedbacks - 10 * updates  # a partial batch waits for the next run
    if updates:
        (version,) = versions
        assert version.status == "candidate" and version.parent is None
        assert version.provenance["corrections"] == ids[: 10 * updates]
        # The first batch writes from scratch; the second starts from what the first wrote.
        first, *rest = script.calls("guideline")
        assert "<<<\n\n>>>" in first.last_user
        if rest:
            assert "GUIDELINE-TAG-1" in rest[0].last_user
        # Each batch shows the writer its ten mistakes with their feedback.
        assert first.last_user.count("- What was wrong:") == 10
    else:
        assert versions == []
    # Two LLM calls per correction that succeeds at once, plus one per guideline update.
    assert report.counts["llm_calls"] == 2 * feedbacks + updates


async def test_a_correction_succeeds_only_after_the_manager_revises_the_instructions(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    # The correction agent gets it right only with the manager's revised instructions.
    script.correction_reply = lambda r, k: fenced(
        case(k).correct_sql if "REVISED-CORRECTION-INSTRUCTIONS" in r.system else "SELECT -1")
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path)) as (_, state):
        assert state.store is not None
        (cid,) = await add_corrections(state.store, [3])
        report = await regenerate(magic_for(state, state.store), activate=False)
        kept = await runs.unused_feedbacks(state.store.pool)
        iterations = await state.store.pool.fetchval(
            "SELECT iterations FROM magic_feedbacks WHERE correction_id = $1", cid)
        outcome = await state.store.pool.fetchval("SELECT outcome FROM corrections WHERE id = $1", cid)

    assert outcome == "success" and iterations == 2 and [k.correction_id for k in kept] == [cid]
    assert [len(script.calls(k)) for k in ("feedback", "correction", "revise_feedback", "revise_correction")] \
        == [2, 2, 1, 1]
    # The manager revised from the agents' last outputs...
    (revise_correction,) = script.calls("revise_correction")
    assert "SELECT -1" in revise_correction.last_user
    (revise_feedback,) = script.calls("revise_feedback")
    assert "always-false condition" in revise_feedback.last_user
    # ...and the second iteration ran with the revised instructions.
    assert "REVISED-FEEDBACK-INSTRUCTIONS" in script.calls("feedback")[1].system
    # The correction agent never saw the correct SQL.
    assert not any(case(3).correct_sql in r.text for r in script.calls("correction"))
    assert report.counts["llm_calls"] == 6


async def test_a_correction_that_never_succeeds_stops_after_five_iterations(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    script.correction_reply = lambda r, k: fenced("SELECT count(*) FROM orders")
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path)) as (_, state):
        assert state.store is not None
        (cid,) = await add_corrections(state.store, [4])
        await regenerate(magic_for(state, state.store), activate=False)
        outcome = await state.store.pool.fetchval("SELECT outcome FROM corrections WHERE id = $1", cid)
        kept = await runs.unused_feedbacks(state.store.pool)
    assert outcome == "exhausted" and kept == []
    assert [len(script.calls(k)) for k in ("feedback", "correction", "revise_feedback", "revise_correction")] \
        == [5, 5, 4, 4]


async def test_instructions_that_would_hand_over_the_correct_sql_are_refused(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    script.correction_reply = lambda r, k: fenced("SELECT -1")
    # A manager that leaks the answer into the correction agent's instructions.
    llm.add(lambda r: f"Just answer {case(5).correct_sql}" if r.system.startswith("[magic:manager-revise-correction]")
            else None)
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path, max_iterations=2)) as (_, state):
        assert state.store is not None
        await add_corrections(state.store, [5])
        await regenerate(magic_for(state, state.store), activate=False)
    assert not any(case(5).correct_sql in r.text for r in script.calls("correction"))


async def test_two_regenerators_racing_only_one_runs(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    slow_feedback = "The query must count cancelled orders and add the customer number."
    held = threading.Event()  # the feedback agent answers only once one run has ended: both surely overlap
    llm._rules.insert(0, type(llm._rules[0])(
        lambda r: Reply(slow_feedback, hold=held) if r.system.startswith("[magic:feedback]") else None, None))
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path)
    async with gateway(settings) as (_, state):
        assert state.store is not None
        await add_corrections(state.store, range(1, 11))
        # A second replica: its own pool on the same store database.
        replica = await Store.open(StoreSettings(dsn=fresh_db))
        try:
            both = [asyncio.create_task(regenerate(magic_for(state, state.store), activate=False)),
                    asyncio.create_task(regenerate(magic_for(state, replica), activate=False))]
            # The locked one ends without the LLM; the other waits for it (bounded: were both to wait, the
            # release below lets them finish, and the outcomes say so).
            await asyncio.wait(both, timeout=60, return_when=asyncio.FIRST_COMPLETED)
            held.set()
            one, two = await asyncio.gather(*both)
        finally:
            held.set()
            await replica.close()
        versions = await guidelines.list_all(state.store.pool)
        run_rows = await runs.recent(state.store.pool)
    assert sorted([one.outcome, two.outcome]) == ["candidate", "locked"]
    assert len(versions) == 1 and len(run_rows) == 1  # the locked one did not even record a run
    assert len(script.calls("feedback")) == 10  # each correction was worked on once


async def test_a_run_that_dies_leaves_the_active_version_untouched(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path)) as (http, state):
        assert state.store is not None
        async with state.store.transaction() as conn:
            v1 = await guidelines.add_candidate(conn, text="1. the DBA's guideline", parent=None, provenance={})
        await guidelines.activate(state.store.pool, v1)
        await add_corrections(state.store, range(1, 11))
        # The LLM dies when the manager starts writing the guideline.
        llm._rules.insert(0, type(llm._rules[0])(
            lambda r: Reply(status=500) if r.system.startswith("[magic:guideline]") else None, None))
        report = await regenerate(magic_for(state, state.store), activate=True)
        versions = await guidelines.list_all(state.store.pool)
        active = await guidelines.active(state.store.pool)
        run_row = (await runs.recent(state.store.pool))[0]
        kept = await runs.unused_feedbacks(state.store.pool)
        answer = await http.post("/v1/guidelines/regenerate", json={})
    assert report.outcome == "failed" and "LLMUnavailable" in (report.error or "")
    assert [v.version for v in versions] == [v1] and active is not None and active.version == v1
    assert run_row["outcome"] == "failed" and run_row["version"] is None
    # The work done before the crash is kept: the next run starts from these ten feedbacks.
    assert len(kept) == 10
    assert answer.status_code == 503 and answer.json()["code"] == "llm_unavailable"
    assert len(script.calls("feedback")) == 10


async def test_held_out_corrections_feed_the_gate_not_the_guideline(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path, holdout_every=4)) as (_, state):
        assert state.store is not None
        ids = await add_corrections(state.store, range(1, 14))
        report = await regenerate(magic_for(state, state.store), activate=True)
        held = [c.id for c in await corrections.holdout(state.store.pool, limit=50)]
        version = await guidelines.get(state.store.pool, report.version or 0)
    assert sorted(held) == [i for i in ids if i % 4 == 0]
    assert version is not None and not set(held) & set(version.provenance["corrections"])
    # Held-out questions never reached the feedback agent.
    seen = {r.last_user.split("customer ")[1].split(" ")[0] for r in script.calls("feedback")}
    assert not seen & {str(ids.index(h) + 1) for h in held}
    assert report.outcome == "activated" and version.status == "active"
    ev = report.evaluation or {}
    assert ev["examples"] == len(held) and ev["candidate_correct"] == len(held) and ev["baseline_correct"] == 0
    # The baseline replay carried the file guideline, the candidate replay the new one.
    replays = script.calls("replay")
    assert sum("FILE-GUIDELINE" in r.system for r in replays) == len(held)
    assert sum("GUIDELINE-TAG" in r.system for r in replays) == len(held)


async def test_a_candidate_worse_than_the_active_version_is_not_activated(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    # Replays are right with the file guideline and wrong with the candidate.
    script.replay_reply = lambda r, k: fenced(case(k).correct_sql if "FILE-GUIDELINE" in r.system else "SELECT -1")
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path, holdout_every=4)) as (_, state):
        assert state.store is not None
        await add_corrections(state.store, range(1, 14))
        report = await regenerate(magic_for(state, state.store), activate=True)
        version = await guidelines.get(state.store.pool, report.version or 0)
        active = await guidelines.active(state.store.pool)
        in_force = await state.guidelines.active("demo")
    assert report.outcome == "rejected" and active is None
    assert version is not None and version.status == "candidate" and version.evaluation is not None
    assert version.evaluation["passed"] is False and version.evaluation["candidate_correct"] == 0
    assert "FILE-GUIDELINE" in in_force.text


def _unused(_: LLMRequest) -> None:  # keeps the import of LLMRequest meaningful for type checkers
    return None
