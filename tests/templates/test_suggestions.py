"""Suggestions from the log (issue 29, part 3): questions asked often whose answers were confirmed or approved
are proposed as templates with their counts, until a template answers them; promoting the approved example
makes that template."""

from __future__ import annotations

from pathlib import Path

from gateway.testing.scripted_llm import ScriptedLLM
from tests.templates.helpers import ask, gateway, is_generation, make_key, settings


async def test_often_asked_and_confirmed_questions_are_suggested_with_counts(
        demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    def answer(r) -> str | None:  # type: ignore[no-untyped-def]
        if not is_generation(r):
            return None
        return "<sql>SELECT count(*) AS regions FROM regions</sql>" if "regions" in r.last_user.rsplit(
            "## Question", 1)[-1] else "<sql>SELECT count(*) AS products FROM products</sql>"
    llm.add(answer)
    async with gateway(settings(demo_dsn, fresh_db, llm, tmp_path)) as (http, state):
        dba, client = await make_key(state, "dba"), await make_key(state, "client")
        asked = [await ask(http, client, q) for q in ("How many regions are there?", "how many regions are there",
                                                      "How many  REGIONS are there?!")]
        for q in ("How many products are there?", "How many products are there?", "How many products are there?"):
            await ask(http, client, q)  # asked as often, never confirmed
        once = await ask(http, client, "How many regions exist?")  # confirmed, but asked once
        for request_id in (asked[0]["request_id"], once["request_id"]):
            fed = await http.post("/v1/feedback", headers=client, json={"request_id": request_id,
                                                                        "verdict": "correct"})
            assert fed.status_code == 201, fed.text

        response = await http.get("/v1/templates/suggestions", headers=dba)
        assert response.status_code == 200, response.text
        found = response.json()["suggestions"]
        assert [(s["question"], s["asked"], s["confirmed"], s["approved"]) for s in found] == [
            ("How many  REGIONS are there?!", 3, 1, 0)]
        assert found[0]["sql"] == "SELECT count(*) AS regions FROM regions" and found[0]["example_id"] is None

        # The dba approves an answer (its feedback approves the example at once), then promotes the example.
        approved = await http.post("/v1/feedback", headers=dba, json={
            "request_id": (await ask(http, dba, "How many regions are there?"))["request_id"], "verdict": "correct"})
        example_id = approved.json()["example_id"]
        found = (await http.get("/v1/templates/suggestions", headers=dba)).json()["suggestions"]
        assert (found[0]["asked"], found[0]["confirmed"], found[0]["approved"], found[0]["example_id"]) == (
            4, 2, 1, example_id)
        made = await http.post("/v1/templates", headers=dba, json={"database": "demo", "name": "region_count",
                                                                  "example_id": example_id})
        assert made.status_code == 201, made.text
        assert made.json()["questions"] == ["How many regions are there"] and made.json()["example_id"] == example_id
        # Answered by the template now: no longer suggested, and answered without the LLM.
        assert (await http.get("/v1/templates/suggestions", headers=dba)).json()["suggestions"] == []
        generations = len([r for r in llm.requests if is_generation(r)])
        body = await ask(http, client, "how many regions are there?")
        assert body["trusted"]["template"] == "region_count" and body["rows"] == [[7]]
        assert len([r for r in llm.requests if is_generation(r)]) == generations
