"""The whole loop over HTTP: questions answered wrongly, users correct them, a DBA approves the corrections,
MAGIC writes a guideline that passes the gate, and the next reflection prompt carries it."""

from __future__ import annotations

from pathlib import Path

from gateway.pipeline import prompts as ask_prompts
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.magic.helpers import GUIDELINE_TAG, MagicScript, case, gateway, number_in, settings_for
from tests.magic.test_cli import cli


def is_generation(r: LLMRequest) -> bool:
    return r.system == ask_prompts.GENERATE_SYSTEM


def is_reflection(r: LLMRequest) -> bool:
    return r.system == ask_prompts.REFLECT_SYSTEM


def asked_case(r: LLMRequest) -> int | None:
    """The case number of the question being asked (verified examples above it may name other cases)."""
    return number_in(r.last_user.rsplit("## Question", 1)[-1])


async def test_corrections_in_guideline_out_activated_then_used_in_reflection(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    # Generation answers each case with its wrong SQL; a broken question later gets broken SQL.
    llm.add(lambda r: f"<sql>{case(k).incorrect_sql}</sql>" if is_generation(r) and (k := asked_case(r))
            else None)
    llm.add(lambda r: "<sql>SELECT no_such_column FROM orders</sql>" if is_generation(r) else None)
    llm.add(lambda r: "<sql>SELECT count(*) FROM orders WHERE status = 'cancelled'</sql>" if is_reflection(r)
            else None)
    # 13 corrections with every 4th held out: 10 feed MAGIC (one batch), 3 judge the candidate.
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, holdout_every=4)
    async with gateway(settings) as (http, state):
        for k in range(1, 14):
            asked = await http.post("/v1/ask", json={"database": "demo", "question": case(k).question},
                                    headers={"X-Client-Id": "analyst"})  # feedback comes from who asked
            assert asked.status_code == 200, asked.text
            assert asked.json()["sql"] == case(k).incorrect_sql
            fed = await http.post("/v1/feedback", headers={"X-Client-Id": "analyst"}, json={
                "request_id": asked.json()["request_id"], "verdict": "incorrect", "corrected_sql": case(k).correct_sql})
            assert fed.status_code == 201, fed.text
            assert fed.json()["example_status"] == "proposed"

        # A DBA reviews what the analyst taught: approving the examples makes their corrections reviewed.
        queue = (await http.get("/v1/examples", params={"status": "proposed"})).json()["examples"]
        assert len(queue) == 13 and {e["proposed_by"] for e in queue} == {"analyst"}
        for example in queue:
            approved = await http.post(f"/v1/examples/{example['id']}/approve", json={"note": "checked"})
            assert approved.status_code == 200 and approved.json()["status"] == "approved", approved.text

        regenerated = await http.post("/v1/guidelines/regenerate", json={})
        listing = (await http.get("/v1/guidelines")).json()
        detail = (await http.get("/v1/guidelines/1")).json()
        after = await http.post("/v1/ask", json={"database": "demo", "question": "How many cancelled orders are there?"})
        metrics = (await http.get("/metrics")).text

    assert regenerated.status_code == 200, regenerated.text
    report = regenerated.json()
    assert report["outcome"] == "activated" and report["version"] == 1
    assert report["counts"]["feedbacks_kept"] == 10 and report["counts"]["guideline_updates"] == 1
    assert listing["active"] == 1 and listing["versions"][0]["status"] == "active"
    assert len(detail["provenance"]["corrections"]) == 10
    assert detail["evaluation"]["passed"] and detail["evaluation"]["examples"] == 3
    assert detail["text"].startswith("1. ") and "ask-to-myself" in detail["text"]

    # The guideline reached the reflection prompt of the next question, and the answer names the version.
    assert after.status_code == 200, after.text
    assert after.json()["guideline_version"] == "v1"
    (reflection,) = [r for r in llm.requests if is_reflection(r)]
    assert f"{GUIDELINE_TAG}-1" in reflection.text and "FILE-GUIDELINE" not in reflection.text
    # The users' corrected SQL came back as verified few-shot examples for a similar question.
    last_generation = [r for r in llm.requests if is_generation(r)][-1]
    assert "Verified examples" in last_generation.text and "status = 'cancelled'" in last_generation.text
    assert "nl2sql_guideline_active_version 1.0" in metrics
    assert 'nl2sql_regeneration_runs_total{outcome="activated"} 1.0' in metrics
    assert len(script.calls("guideline")) == 1

    # The DBA's view of the generated version, through the real command line.
    shown = cli(["guideline", "show"], fresh_db, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "# Guideline v1 (active)" in shown.stdout
    provenance = ", ".join(str(c) for c in detail["provenance"]["corrections"])
    assert f"provenance: 10 correction(s): {provenance}" in shown.stdout
    assert detail["text"].strip() in shown.stdout  # the generated reminders, numbered, with ask-to-myself
