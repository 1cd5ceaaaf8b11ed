"""A global guideline version is replayed on every database's verified questions: a DBA of one database reads
its replays and its evaluation without the other databases' questions and SQL."""

from __future__ import annotations

from gateway.magic.replay import RegressionReport
from gateway.store import guidelines, regressions
from tests.auth.conftest import Gateway, bearer
from tests.auth.test_http import assert_problem

SECRET_SQL = "SELECT count(*) FROM orders WHERE customer_id = 4242"


def item(n: int, database: str, question: str, sql: str) -> dict:
    side = {"status": "ok", "sql": sql, "error": None, "llm_calls": 1, "prompt_tokens": 1, "completion_tokens": 1,
            "latency_ms": 1.0, "right": True, "reason": None}
    return {"key": f"example:{n}", "source": "example", "id": str(n), "database": database, "question": question,
            "sql": sql, "verdict": "regressed", "suspect": None, "reference_error": None,
            "before": side, "after": {**side, "right": False, "reason": "wrong_values"}}


async def test_a_dba_of_one_database_sees_only_its_questions_in_a_global_replay(gw: Gateway) -> None:
    store = gw.state.store
    assert store is not None
    rls_dba, demo_dba = await gw.key("dba", databases=("rls",)), await gw.key("dba", databases=("demo",))
    client = await gw.key("client")
    async with store.transaction() as conn:
        g = await guidelines.add_candidate(conn, text="1. global reminders", parent=None, provenance={})
        d = await guidelines.add_candidate(conn, text="1. demo reminders", parent=None, provenance={},
                                           database="demo")
    report = RegressionReport("in force", "candidate", [
        item(1, "demo", "How many orders did customer 4242 place?", SECRET_SQL),
        item(2, "rls", "How many notes are there?", "SELECT count(*) FROM notes")]).as_dict()
    await regressions.add(store.pool, report=report, subject=f"guideline v{g}", actor="test", passed=False,
                          guideline_version=g)
    await regressions.add(store.pool, report=report, subject=f"guideline v{d}", actor="test", passed=False,
                          guideline_version=d, database="demo")
    await guidelines.set_evaluation(store.pool, g, {"passed": False, "regressions": report["regressions"],
                                                    "items": report["regressions"]})
    as_rls = bearer(rls_dba)
    listed = await gw.http.get(f"/v1/guidelines/{g}/regressions", headers=as_rls)
    detail = await gw.http.get(f"/v1/guidelines/{g}", headers=as_rls)
    assert listed.status_code == 200 and detail.status_code == 200
    (seen,) = listed.json()["reports"]
    assert [r["question"] for r in seen["report"]["regressions"]] == ["How many notes are there?"]
    assert seen["counts"]["replayed"] == 1 and seen["regressed"] == 2 and seen["passed"] is False
    for text in (listed.text, detail.text):
        assert "4242" not in text
    # a database's own version stays its DBAs' (and nobody's below dba)
    assert_problem(await gw.http.get(f"/v1/guidelines/{d}/regressions", headers=as_rls), 403, "forbidden")
    assert_problem(await gw.http.get(f"/v1/guidelines/{g}/regressions", headers=bearer(client)), 403, "forbidden")
    mine = await gw.http.get(f"/v1/guidelines/{d}/regressions", headers=bearer(demo_dba))
    assert mine.status_code == 200 and SECRET_SQL in mine.text
