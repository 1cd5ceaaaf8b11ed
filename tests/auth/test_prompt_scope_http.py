"""Over HTTP, with keys mapped to Postgres roles: the schema route and the ask prompts show only what the
key's role may read (gateway.context.scope); a role that does not exist is a 403 problem, not a 500."""

from __future__ import annotations

from gateway.testing.scripted_llm import ScriptedLLM
from tests.auth.conftest import Gateway, Roles, bearer


async def test_the_schema_route_shows_only_what_the_mapped_role_may_read(gw: Gateway, roles: Roles) -> None:
    mapped, plain = await gw.key(role="dba", pg_role=roles.bi), await gw.key(role="dba")
    response = await gw.http.get("/v1/databases/demo/schema", headers=bearer(mapped))
    assert response.status_code == 200, response.text
    assert sorted(t["name"] for t in response.json()["tables"]) == ["products", "regions"]
    response = await gw.http.get("/v1/databases/demo/schema", headers=bearer(plain))
    assert "customers" in {t["name"] for t in response.json()["tables"]}


async def test_an_ask_prompt_holds_only_what_the_mapped_role_may_read(gw: Gateway, roles: Roles,
                                                                      llm_server: ScriptedLLM) -> None:
    llm_server.reset()
    llm_server.add_reply("<sql>SELECT count(*) AS n FROM regions</sql>")
    try:
        token = await gw.key(pg_role=roles.bi, databases=("demo",))
        response = await gw.http.post("/v1/ask", json={"database": "demo", "question": "Which customers in "
                                      "Berlin, first name Marco?"}, headers=bearer(token))
        sent = "\n".join(str(m.get("content", "")) for r in llm_server.requests for m in r.messages)
    finally:
        llm_server.reset()
    assert response.status_code == 200, response.text
    assert "CREATE TABLE regions" in sent
    for word in ("CREATE TABLE customers", "CREATE TABLE employees", "first_name", "'Marco'", "likely means"):
        assert word not in sent, word


async def test_a_key_mapped_to_a_missing_role_gets_a_problem(gw: Gateway) -> None:
    token = await gw.key(role="dba", pg_role='missing"; role')
    for response in (await gw.http.get("/v1/databases/demo/schema", headers=bearer(token)),
                     await gw.http.post("/v1/ask", json={"database": "demo", "question": "How many orders?"},
                                        headers=bearer(token))):
        assert response.status_code == 403, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["code"] == "unknown_pg_role"
