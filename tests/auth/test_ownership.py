"""Who owns an answer: feedback, corrections and example proposals come only from the principal that asked.

The poisoning hole these tests close: a client picked ``X-Request-Id``, the audit kept its answer under that
id, and a dba key that later asked under the same header approved the client's question and SQL with its own
``verdict: correct``; every key then got the client's SQL for that question without an LLM call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gateway.api.app import create_app
from gateway.auth import Principal, Role
from gateway.service import Gateway as PyGateway
from gateway.settings import StoreSettings
from gateway.store import examples
from gateway.testing.scripted_llm import ScriptedLLM
from tests.auth.conftest import Gateway, auth_settings, bearer

REVENUE = "What was total revenue in 2024?"
POISON = "<sql>SELECT 'poisoned answer' AS revenue</sql>"
HONEST = "<sql>SELECT 'honest answer' AS revenue</sql>"
REGIONS = "How many regions are there?"
TRACE = {"X-Request-Id": "bi-trace-000042"}


@pytest.fixture
async def exact(demo_dsn: str, store_dsn: str, rls_dsn: str, llm_server: ScriptedLLM,
                tmp_path: Path) -> AsyncIterator[Gateway]:
    """Auth on, a store, the scripted LLM, and verified examples answering exact matches without the LLM."""
    settings = auth_settings(demo_dsn, store_dsn, tmp_path, rls_dsn=rls_dsn, llm_url=llm_server.base_url)
    settings = settings.model_copy(update={"store": StoreSettings(dsn=store_dsn, exact_match_answers=True)})
    llm_server.reset()
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as http:
            yield Gateway(http, app.state.gateway)
    llm_server.reset()


async def ask(gw: Gateway, token: str, question: str, headers: dict[str, str] | None = None,
              database: str = "demo") -> httpx.Response:
    return await gw.http.post("/v1/ask", json={"database": database, "question": question},
                              headers={**bearer(token), **(headers or {})})


async def feedback(gw: Gateway, token: str, request_id: str, verdict: str = "correct",
                   **extra: str) -> httpx.Response:
    return await gw.http.post("/v1/feedback", json={"request_id": request_id, "verdict": verdict, **extra},
                              headers=bearer(token))


async def test_a_chosen_request_id_cannot_make_a_dba_approve_another_clients_answer(
        exact: Gateway, llm_server: ScriptedLLM) -> None:
    gw = exact
    client_b, dba, client_c = await gw.key(databases=("demo",)), await gw.key("dba", ("demo",)), \
        await gw.key(databases=("demo",))
    llm_server.add_reply(POISON, when=REVENUE, times=1)
    llm_server.add_reply("<sql>SELECT count(*) AS n FROM regions</sql>", when=REGIONS)
    poisoned = await ask(gw, client_b, REVENUE, TRACE)
    assert poisoned.status_code == 200, poisoned.text
    assert poisoned.json()["rows"] == [["poisoned answer"]]

    own = await ask(gw, dba, REGIONS, TRACE)  # the same header: a trace id the dba's frontend reused
    assert own.status_code == 200, own.text
    assert own.json()["rows"] == [[5]] or own.json()["rows"][0][0] != "poisoned answer"
    approved = await feedback(gw, dba, own.json()["request_id"])
    assert approved.status_code == 201, approved.text
    assert approved.json()["example_status"] == "approved"

    # What the dba approved is its own question and SQL, never client B's.
    assert gw.state.store is not None
    example = await examples.get(gw.state.store.pool, approved.json()["example_id"])
    assert example is not None and example.question == REGIONS and "poisoned" not in example.sql
    assert await examples.exact(gw.state.store.pool, "demo", REVENUE) is None

    # Another key asking client B's question is answered by the LLM, not with B's SQL.
    llm_server.add_reply(HONEST, when=REVENUE)
    before = len(llm_server.requests)
    later = await ask(gw, client_c, REVENUE)
    assert later.status_code == 200, later.text
    assert later.json()["rows"] == [["honest answer"]]
    assert len(llm_server.requests) > before
    # The header the client chose names neither answer: feedback on it finds nothing.
    assert (await feedback(gw, dba, "bi-trace-000042")).json()["code"] == "unknown_request"


async def test_the_client_request_id_is_a_correlation_id_only(exact: Gateway, llm_server: ScriptedLLM) -> None:
    gw = exact
    token = await gw.key(databases=("demo",))
    llm_server.add_reply("<sql>SELECT count(*) AS n FROM regions</sql>", when=REGIONS)
    first, second = await ask(gw, token, REGIONS, TRACE), await ask(gw, token, REGIONS, TRACE)
    ids = {first.json()["request_id"], second.json()["request_id"]}
    assert len(ids) == 2 and "bi-trace-000042" not in ids
    for response in (first, second):
        assert response.headers["x-request-id"] == response.json()["request_id"]
        assert response.headers["x-correlation-id"] == "bi-trace-000042"
    # Each answer is its own audited request: the asker's feedback reaches each.
    for request_id in ids:
        assert (await feedback(gw, token, request_id, "incorrect")).status_code == 201


async def test_feedback_from_anyone_but_the_asker_is_unknown_request(exact: Gateway,
                                                                      llm_server: ScriptedLLM) -> None:
    """Same database, other database, a dba, an admin: the answer is the one a missing id gets, and it never
    names the answer's database (no oracle for ids that exist elsewhere)."""
    gw = exact
    asker = await gw.key(databases=("demo",))
    llm_server.add_reply("<sql>SELECT count(*) AS n FROM regions</sql>", when=REGIONS)
    answer = await ask(gw, asker, REGIONS)
    request_id = answer.json()["request_id"]
    others = [await gw.key(databases=("demo",)), await gw.key(databases=("rls",)), await gw.key("dba", ("demo",)),
              await gw.key("admin")]
    missing = await feedback(gw, others[1], "no-such-request-id")
    assert missing.status_code == 404 and missing.json()["code"] == "unknown_request"
    for token in others:
        for verdict, extra in (("correct", {}), ("incorrect", {"corrected_sql": "SELECT 1 AS n"})):
            response = await feedback(gw, token, request_id, verdict, **extra)
            body = response.json()
            assert response.status_code == 404 and body["code"] == "unknown_request", body
            assert set(body) == set(missing.json()) and "demo" not in response.text
    assert gw.state.store is not None
    assert await gw.state.store.pool.fetchval("SELECT count(*) FROM feedback WHERE request_id = $1", request_id) == 0
    assert (await feedback(gw, asker, request_id)).status_code == 201  # the asker still can


async def test_python_feedback_is_bound_to_the_end_user(exact: Gateway, llm_server: ScriptedLLM) -> None:
    """Two end users behind one OAuth client: neither can give feedback on the other's answer."""
    gw = exact
    service: PyGateway = gw.http._transport.app.state.service  # type: ignore[attr-defined]
    alice = Principal(name="alice", role=Role.DBA, databases=frozenset({"demo"}), user="alice", client="bi-frontend")
    bob = Principal(name="bob", role=Role.DBA, databases=frozenset({"demo"}), user="bob", client="bi-frontend")
    llm_server.add_reply("<sql>SELECT count(*) AS n FROM regions</sql>", when=REGIONS)
    answer = await service.answer(service.question("demo", REGIONS, principal=alice))
    assert answer.request_id
    from gateway import errors
    with pytest.raises(errors.UnknownRequest):
        await service.feedback(answer.request_id, "correct", principal=bob)
    stored, created = await service.feedback(answer.request_id, "correct", principal=alice)
    assert created and stored.client_id == "user:alice"
