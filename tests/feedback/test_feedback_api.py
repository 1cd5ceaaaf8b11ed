"""POST /v1/feedback against a real store and the demo database."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gateway.settings import AuthSettings, DatabaseSettings, Settings
from gateway.state import GatewayState
from gateway.store import audit, examples
from tests.magic.helpers import case, gateway, settings_for


async def answered(state: GatewayState, request_id: str, k: int = 1, owner: str = "alice") -> None:
    """An audit row as /v1/ask leaves it: case k answered with its incorrect SQL, asked by ``owner``."""
    assert state.store is not None
    await audit.record(state.store.pool, audit.AuditEntry(
        request_id=request_id, database="demo", question=case(k).question, status="ok",
        final_sql=case(k).incorrect_sql, guideline_version="default", owner=owner))


async def count(state: GatewayState, table: str) -> int:
    assert state.store is not None
    return int(await state.store.pool.fetchval(f"SELECT count(*) FROM {table}"))


async def post(http: httpx.AsyncClient, body: dict, client: str | None = "alice") -> httpx.Response:
    headers = {"X-Client-Id": client} if client else {}
    return await http.post("/v1/feedback", json=body, headers=headers)


async def test_feedback_is_idempotent_per_request_and_owner(demo_dsn: str, fresh_db: str, tmp_path: Path) -> None:
    async with gateway(settings_for(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        await answered(state, "req-1")
        first = await post(http, {"request_id": "req-1", "verdict": "correct"})
        again = await post(http, {"request_id": "req-1", "verdict": "correct"})
        changed = await post(http, {"request_id": "req-1", "verdict": "incorrect"})
        # Only the client that asked may judge the answer: anyone else finds no such request.
        other = await post(http, {"request_id": "req-1", "verdict": "incorrect"}, client="bob")
        anonymous = await post(http, {"request_id": "req-1", "verdict": "correct"}, client=None)
        await answered(state, "req-1b", owner="anonymous")
        anonymous_own = await post(http, {"request_id": "req-1b", "verdict": "correct"}, client=None)
        rows = await count(state, "feedback")
        example = await examples.get(state.store.pool, first.json()["example_id"])  # type: ignore[union-attr]
        used = await examples.exact(state.store.pool, "demo", case(1).question)  # type: ignore[union-attr]
        metrics = (await http.get("/metrics")).text
    assert first.status_code == 201 and first.json()["created"] is True
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["feedback_id"] == first.json()["feedback_id"]
    assert changed.status_code == 409 and changed.json()["code"] == "feedback_conflict"
    assert other.status_code == 404 and other.json()["code"] == "unknown_request"
    assert anonymous.status_code == 404 and anonymous.json()["code"] == "unknown_request"
    assert anonymous_own.status_code == 201 and anonymous_own.json()["client_id"] == "anonymous"
    assert rows == 2
    # `correct` proposed the question and its final SQL as an example; nobody reviewed it, so it is not used.
    assert example is not None and example.sql == case(1).incorrect_sql and example.status == "proposed"
    assert example.proposed_by == "alice" and first.json()["example_status"] == "proposed" and used is None
    assert 'nl2sql_feedback_total{database="demo",verdict="correct"}' in metrics
    assert 'nl2sql_feedback_accuracy_ratio{database="demo"}' in metrics


async def test_a_corrected_sql_becomes_a_verified_correction_and_example(
    demo_dsn: str, fresh_db: str, tmp_path: Path,
) -> None:
    async with gateway(settings_for(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        await answered(state, "req-2", k=2)
        answer = await post(http, {"request_id": "req-2", "verdict": "incorrect",
                                   "corrected_sql": case(2).correct_sql, "note": "count cancelled only"})
        row = await state.store.pool.fetchrow("SELECT * FROM corrections")  # type: ignore[union-attr]
    assert answer.status_code == 201, answer.text
    assert row["id"] == answer.json()["correction_id"] and row["source"] == "user" and row["verified"]
    assert (row["incorrect_sql"], row["corrected_sql"]) == (case(2).incorrect_sql, case(2).correct_sql)
    assert row["processed_at"] is None and row["request_id"] == "req-2"


@pytest.mark.parametrize(("sql", "code"), [
    ("DELETE FROM orders", "write_statement"),
    ("SELECT 1; DROP TABLE orders", None),
    ("SELECT pg_sleep(5)", "function_blocked"),
    ("WITH gone AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM gone", None),
    ("SELECT * FROM pg_shadow", None),
])
async def test_unsafe_corrected_sql_is_rejected_with_a_code_and_nothing_is_stored(
    demo_dsn: str, fresh_db: str, tmp_path: Path, sql: str, code: str | None,
) -> None:
    async with gateway(settings_for(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        await answered(state, "req-3")
        answer = await post(http, {"request_id": "req-3", "verdict": "incorrect", "corrected_sql": sql})
        stored = [await count(state, t) for t in ("feedback", "corrections", "verified_examples")]
        orders = await state.target("demo").pool.fetchval("SELECT count(*) FROM orders")
    assert answer.status_code == 422 and answer.headers["content-type"].startswith("application/problem+json")
    body = answer.json()
    assert body["code"] == "correction_blocked" and body["findings"]
    if code:
        assert code in body["codes"]
    assert stored == [0, 0, 0] and orders > 0


async def test_a_corrected_sql_that_does_not_run_is_rejected(demo_dsn: str, fresh_db: str, tmp_path: Path) -> None:
    async with gateway(settings_for(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        await answered(state, "req-4")
        answer = await post(http, {"request_id": "req-4", "verdict": "incorrect",
                                   "corrected_sql": "SELECT no_such_column FROM orders"})
        stored = await count(state, "corrections") + await count(state, "feedback")
    assert answer.status_code == 422 and answer.json()["code"] == "query_error"
    assert answer.json()["sqlstate"] == "42703" and stored == 0


async def test_bad_feedback_requests(demo_dsn: str, fresh_db: str, tmp_path: Path) -> None:
    async with gateway(settings_for(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        await answered(state, "req-5")
        unknown = await post(http, {"request_id": "nope", "verdict": "correct"})
        both = await post(http, {"request_id": "req-5", "verdict": "correct", "corrected_sql": "SELECT 1"})
        verdict = await post(http, {"request_id": "req-5", "verdict": "maybe"})
        client = await post(http, {"request_id": "req-5", "verdict": "correct"}, client="bad id with spaces")
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_request"
    assert both.status_code == 422 and both.json()["code"] == "invalid_request"
    assert verdict.status_code == 422 and verdict.json()["code"] == "invalid_request"
    assert client.status_code == 422 and client.json()["code"] == "invalid_request"


async def test_without_a_store_feedback_answers_store_not_configured(demo_dsn: str, tmp_path: Path) -> None:
    settings = Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}, guidelines_dir=tmp_path,
                        rules_dir=tmp_path, auth={"enabled": False})
    async with gateway(settings) as (http, _):
        answer = await post(http, {"request_id": "x", "verdict": "correct"})
        listing = await http.get("/v1/guidelines")
    assert answer.status_code == 503 and answer.json()["code"] == "store_not_configured"
    assert listing.status_code == 503 and listing.json()["code"] == "store_not_configured"


async def test_with_auth_feedback_is_keyed_by_the_api_key_and_guidelines_need_a_dba(
    demo_dsn: str, fresh_db: str, tmp_path: Path,
) -> None:
    from gateway.auth.keys import new_token
    from gateway.store import api_keys

    settings = settings_for(demo_dsn, fresh_db, None, tmp_path).model_copy(update={"auth": AuthSettings()})
    async with gateway(settings) as (http, state):
        assert state.store is not None
        tokens = {}
        for name, role, dbs in (("app", "client", ["demo"]), ("elsewhere", "client", ["other"]),
                                ("dba", "dba", ["*"])):
            token = new_token()
            await api_keys.create(state.store.pool, key_id=token.key_id, name=name, role=role, databases=dbs,
                                  pg_role=None, secret_sha256=token.secret_sha256)
            tokens[name] = (token.token, token.key_id)
        await answered(state, "req-6", owner=f"key:{tokens['app'][1]}")

        def auth(name: str, client: str | None = None) -> dict[str, str]:
            return {"Authorization": f"Bearer {tokens[name][0]}", **({"X-Client-Id": client} if client else {})}

        body = {"request_id": "req-6", "verdict": "correct"}
        missing = await http.post("/v1/feedback", json=body)
        other_db = await http.post("/v1/feedback", json=body, headers=auth("elsewhere"))
        # The header cannot make the key speak as someone else.
        ok = await http.post("/v1/feedback", json=body, headers=auth("app", client="dba"))
        client_list = await http.get("/v1/guidelines", headers=auth("app"))
        dba_list = await http.get("/v1/guidelines", headers=auth("dba"))
    assert missing.status_code == 401 and missing.json()["code"] == "unauthorized"
    # Another key's answer is not found, whatever that key's databases: no id-existence oracle.
    assert other_db.status_code == 404 and other_db.json()["code"] == "unknown_request"
    assert "demo" not in other_db.text
    assert ok.status_code == 201 and ok.json()["client_id"] == f"key:{tokens['app'][1]}"
    assert client_list.status_code == 403 and dba_list.status_code == 200


async def test_nul_characters_are_refused_by_every_request_body(demo_dsn: str, fresh_db: str,
                                                                tmp_path: Path) -> None:
    """Postgres text cannot hold U+0000: each body's strings are refused with 422, never a 500 from the store."""
    nul = "req\x00-1"
    bodies = {
        "/v1/feedback": [{"request_id": nul, "verdict": "correct"},
                         {"request_id": "req-1", "verdict": "incorrect", "corrected_sql": "SELECT 1\x00"},
                         {"request_id": "req-1", "verdict": "incorrect", "note": "\x00"}],
        "/v1/sql": [{"database": "demo", "sql": "SELECT 1 -- \x00"}, {"database": "de\x00mo", "sql": "SELECT 1"}],
        "/v1/check": [{"sql": "SELECT '\x00'"}],
        "/v1/ask": [{"database": "demo", "question": "how many\x00 orders?"},
                    {"database": "demo", "question": "how many orders?", "evidence": "\x00"}],
    }
    async with gateway(settings_for(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        await answered(state, "req-1")
        assert state.store is not None
        example = await examples.add(state.store.pool, database="demo", question=case(1).question,
                                     sql=case(1).correct_sql, source="feedback")
        bodies[f"/v1/examples/{example}/approve"] = [{"note": "looks right\x00"}]
        bodies[f"/v1/examples/{example}/reject"] = [{"note": "\x00"}]
        answers = [(path, await http.post(path, json=body, headers={"X-Client-Id": "alice"}))
                   for path, group in bodies.items() for body in group]
        still_proposed = await examples.get(state.store.pool, example)
        rows = await count(state, "feedback")
        still_served = await post(http, {"request_id": "req-1", "verdict": "correct"})
    for path, answer in answers:
        assert answer.status_code == 422, (path, answer.text)
        assert answer.json()["code"] == "invalid_request" and "NUL" in answer.json()["detail"], path
    assert rows == 0 and still_served.status_code == 201
    assert still_proposed is not None and still_proposed.status == "proposed"
