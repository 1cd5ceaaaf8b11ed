"""Guideline routes: list and read versions, activate through the gate or by force, roll back."""

from __future__ import annotations

from pathlib import Path

from gateway.magic import lifecycle
from gateway.store import guidelines
from gateway.testing.scripted_llm import ScriptedLLM
from tests.magic.helpers import MagicScript, add_corrections, case, fenced, gateway, guideline_text, settings_for


async def test_activation_goes_through_the_gate_unless_forced_and_rollback_restores(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    # The candidate is worse than the file guideline on every held-out case.
    script.replay_reply = lambda r, k: fenced(case(k).correct_sql if "FILE-GUIDELINE" in r.system else "SELECT -1")
    async with gateway(settings_for(demo_dsn, fresh_db, llm, tmp_path)) as (http, state):
        store = state.store
        assert store is not None
        ids = await add_corrections(store, range(1, 4))
        for cid in ids:
            await store.pool.execute("UPDATE corrections SET processed_at = now(), outcome = 'holdout' WHERE id = $1",
                                     cid)
        async with store.transaction() as conn:
            v1 = await guidelines.add_candidate(conn, text=guideline_text(1), parent=None, provenance={})
            v2 = await guidelines.add_candidate(conn, text=guideline_text(2), parent=v1, provenance={})
        refused = await http.post(f"/v1/guidelines/{v1}/activate", json={})
        forced = await http.post(f"/v1/guidelines/{v1}/activate", json={"force": True})
        forced2 = await http.post(f"/v1/guidelines/{v2}/activate", json={"force": True})
        in_force = (await state.guidelines.active("demo")).version
        back = await lifecycle.rollback(state, store)
        after_rollback = (await state.guidelines.active("demo")).version
        unknown = await http.post("/v1/guidelines/99/activate", json={})
        missing = await http.get("/v1/guidelines/99")
        stored = await guidelines.get(store.pool, v1)
    assert refused.status_code == 409 and refused.json()["code"] == "guideline_gate_failed"
    assert refused.json()["evaluation"]["baseline_correct"] == 3 and refused.json()["evaluation"]["candidate_correct"] == 0
    assert stored is not None and stored.evaluation is not None and stored.evaluation["passed"] is False
    assert forced.status_code == 200 and forced.json()["status"] == "active"
    assert forced2.status_code == 200 and in_force == f"v{v2}"
    assert back.version == v1 and after_rollback == f"v{v1}"
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_guideline_version"
    assert missing.status_code == 404
    assert len(script.calls("replay")) == 6  # only the unforced activation replayed (3 cases x 2 guidelines)
