"""What one client teaches reaches others only after review (issue 9, item 7): over HTTP with API keys,
a client's correction is proposed, unused until a dba approves it, and gone again once rejected; approved
examples are re-checked against the rules in force when they are used."""

from __future__ import annotations

from pathlib import Path

import httpx

from gateway.auth import new_token
from gateway.pipeline import prompts
from gateway.settings import AuthSettings, StoreSettings
from gateway.state import GatewayState
from gateway.store import api_keys, examples
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.magic.helpers import case, gateway, number_in, settings_for


def is_generation(r: LLMRequest) -> bool:
    return r.system == prompts.GENERATE_SYSTEM


def script_generation(llm: ScriptedLLM) -> None:
    """Generation answers case k's question with its wrong SQL, anything else with a count of regions."""
    def answer(r: LLMRequest) -> str | None:
        if not is_generation(r):
            return None
        k = number_in(r.last_user.rsplit("## Question", 1)[-1])
        return f"<sql>{case(k).incorrect_sql if k else 'SELECT count(*) FROM regions'}</sql>"
    llm.add(answer)


async def make_key(state: GatewayState, role: str, databases: tuple[str, ...] = ("*",)) -> tuple[str, dict[str, str]]:
    assert state.store is not None
    token = new_token()
    await api_keys.create(state.store.pool, key_id=token.key_id, name=f"{role}-{token.key_id}", role=role,
                          databases=list(databases), pg_role=None, secret_sha256=token.secret_sha256)
    return token.key_id, {"Authorization": f"Bearer {token.token}"}


async def ask(http: httpx.AsyncClient, key: dict[str, str], question: str) -> dict:
    response = await http.post("/v1/ask", headers=key, json={"database": "demo", "question": question})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_a_client_correction_is_used_for_others_only_between_approval_and_rejection(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script_generation(llm)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path)
    settings.auth = AuthSettings(enabled=True, cache_ttl_s=0.0)
    settings.store = StoreSettings(dsn=fresh_db, exact_match_answers=True)
    question, fix = case(2).question, case(2).correct_sql
    async with gateway(settings) as (http, state):
        alice_id, alice = await make_key(state, "client")
        _, bob = await make_key(state, "client")
        dba_id, dba = await make_key(state, "dba")
        _, other_dba = await make_key(state, "dba", databases=("elsewhere",))

        asked = await ask(http, alice, question)
        fed = await http.post("/v1/feedback", headers=alice, json={
            "request_id": asked["request_id"], "verdict": "incorrect", "corrected_sql": fix, "note": "trust me"})
        assert fed.status_code == 201 and fed.json()["example_status"] == "proposed", fed.text
        example_id = fed.json()["example_id"]

        # Proposed: another client's question is answered by the LLM, and its prompt does not carry the fix.
        before = await ask(http, bob, question)
        assert [a["source"] for a in before["attempts"]] == ["generation"]
        assert fix not in [r for r in llm.requests if is_generation(r)][-1].text
        assert before["sql"] == case(2).incorrect_sql

        # Clients may not review, nor see the queue; a dba of another database sees nothing of it.
        for response in (await http.get("/v1/examples", headers=bob),
                         await http.post(f"/v1/examples/{example_id}/approve", headers=alice)):
            assert response.status_code == 403 and response.json()["code"] == "forbidden"
        assert (await http.get("/v1/examples", headers=other_dba)).json() == {"examples": []}
        elsewhere = await http.post(f"/v1/examples/{example_id}/approve", headers=other_dba)
        assert elsewhere.status_code == 404 and elsewhere.json()["code"] == "unknown_example"

        queue = (await http.get("/v1/examples", headers=dba, params={"status": "proposed"})).json()["examples"]
        assert [(e["id"], e["sql"], e["proposed_by"], e["status"]) for e in queue] == [
            (example_id, fix, f"key:{alice_id}", "proposed")]
        missing = await http.post("/v1/examples/999999/approve", headers=dba)
        assert missing.status_code == 404 and missing.json()["code"] == "unknown_example"

        approved = await http.post(f"/v1/examples/{example_id}/approve", headers=dba, json={"note": "checked"})
        assert approved.status_code == 200, approved.text
        assert (approved.json()["status"], approved.json()["reviewed_by"], approved.json()["review_note"]) == (
            "approved", f"key:{dba_id}", "checked")
        again = await http.post(f"/v1/examples/{example_id}/approve", headers=dba)
        assert again.status_code == 409 and again.json()["code"] == "example_already_reviewed"
        assert again.json()["example_status"] == "approved"

        # Approved: the same question is answered from it without the LLM, a similar one sees it as an example.
        calls = len(llm.requests)
        exact = await ask(http, bob, question.upper())
        assert [a["source"] for a in exact["attempts"]] == ["verified_example"] and exact["sql"] == fix
        assert len(llm.requests) == calls
        await ask(http, bob, "Which orders did customer two cancel, roughly how many?")
        assert fix in [r for r in llm.requests if is_generation(r)][-1].text

        # Withdrawn: used nowhere any more, and a rejected example stays rejected.
        rejected = await http.post(f"/v1/examples/{example_id}/reject", headers=dba, json={"note": "wrong"})
        assert rejected.status_code == 200 and rejected.json()["status"] == "rejected", rejected.text
        after = await ask(http, bob, question)
        assert [a["source"] for a in after["attempts"]] == ["generation"]
        twice = await http.post(f"/v1/examples/{example_id}/reject", headers=dba)
        assert twice.status_code == 409 and twice.json()["example_status"] == "rejected"
        spec = (await http.get("/openapi.json", headers=dba)).json()

    for route in ("/v1/examples/{example_id}/approve", "/v1/examples/{example_id}/reject"):
        documented = spec["paths"][route]["post"]["responses"]
        assert {"404", "409", "403"} <= set(documented), documented


async def test_feedback_from_a_dba_key_is_the_review(demo_dsn: str, fresh_db: str, llm: ScriptedLLM,
                                                     tmp_path: Path) -> None:
    script_generation(llm)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path)
    settings.auth = AuthSettings(enabled=True, cache_ttl_s=0.0)
    async with gateway(settings) as (http, state):
        dba_id, dba = await make_key(state, "dba")
        asked = await ask(http, dba, case(3).question)
        fed = await http.post("/v1/feedback", headers=dba, json={
            "request_id": asked["request_id"], "verdict": "incorrect", "corrected_sql": case(3).correct_sql})
        assert state.store is not None
        correction = await state.store.pool.fetchrow("SELECT reviewed_by FROM corrections")
        example = await examples.get(state.store.pool, fed.json()["example_id"])
    assert fed.status_code == 201 and fed.json()["example_status"] == "approved", fed.text
    assert example is not None and example.reviewed_by == f"key:{dba_id}"
    assert correction["reviewed_by"] == f"key:{dba_id}"


async def test_an_approved_example_is_used_only_while_the_rules_in_force_allow_its_sql(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script_generation(llm)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path)
    settings.rules_dir.mkdir(exist_ok=True)
    rules = settings.rules_dir / "demo.yaml"
    # A DBA's own function, allowed by the rules when the example was approved. (A name-based filter would
    # not notice when the rules stop allowing it: only the safety check with the current policy does.)
    rules.write_text("extra_functions: [region_label]\n")
    stored_sql = "SELECT region_label(name) AS label FROM regions"
    async with gateway(settings) as (http, state):
        assert state.store is not None
        await examples.add(state.store.pool, database="demo", question="Label every region", sql=stored_sql,
                           source="dba")
        await http.post("/v1/ask", json={"database": "demo", "question": "Label all the regions"})
        rules.write_text("extra_functions: []\n")
        await http.post("/v1/ask", json={"database": "demo", "question": "Label all the regions"})
    allowed, refused = [r for r in llm.requests if is_generation(r)]
    assert stored_sql in allowed.text
    assert stored_sql not in refused.text and "Verified examples" not in refused.text
