"""Every access decision over HTTP, against the real store (keys) and real Postgres (roles, GRANTs, RLS)."""

from __future__ import annotations

import pytest

from gateway.auth.access import PUBLIC_ROUTES, ROUTE_ROLES, required_role
from gateway.auth.keys import Role
from gateway.auth.resource import METADATA_PATHS
from gateway.store import api_keys
from gateway.testing.scripted_llm import ScriptedLLM
from tests.auth.conftest import Gateway, Roles, bearer

SQL = {"database": "demo", "sql": "SELECT 1 AS one"}


def assert_problem(response, status: int, code: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == code, body
    return body  # type: ignore[no-any-return]


# --- authentication -----------------------------------------------------------------------------------


async def test_no_key_is_unauthorized_with_a_bearer_challenge(gw: Gateway) -> None:
    response = await gw.http.post("/v1/sql", json=SQL)
    assert_problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", [
    "",
    "Bearer",
    "Bearer ",
    "Basic dXNlcjpwYXNz",
    "Token nl2sql_0123456789ab_" + "0" * 64,
    "Bearer nl2sql_0123456789ab",                       # no secret
    "Bearer nl2sql_0123456789ab_" + "0" * 63,           # secret one character short
    "Bearer nl2sql_0123456789AB_" + "0" * 64,           # id not lower-case hex
    "Bearer other_0123456789ab_" + "0" * 64,            # wrong prefix
    "Bearer nl2sql_0123456789ab_" + "0" * 64 + "_x",    # trailing junk
    ("Bearer nl2sql_0123456789ab_" + "é" * 64).encode("latin-1"),  # non-ASCII secret
    "Bearer ' OR 1=1 --",
])
async def test_malformed_authorization_headers_are_unauthorized(gw: Gateway, header: str | bytes) -> None:
    response = await gw.http.post("/v1/sql", json=SQL, headers={"Authorization": header})
    body = assert_problem(response, 401, "unauthorized")
    assert "nl2sql_0123456789ab" not in body["detail"]  # the presented token is never echoed


async def test_a_valid_key_is_accepted_and_the_scheme_is_case_insensitive(gw: Gateway) -> None:
    token = await gw.key()
    assert (await gw.http.post("/v1/sql", json=SQL, headers=bearer(token))).status_code == 200
    response = await gw.http.post("/v1/sql", json=SQL, headers={"Authorization": f"bearer  {token} "})
    assert response.status_code == 200, response.text


async def test_a_wrong_secret_for_a_real_key_id_is_unauthorized(gw: Gateway) -> None:
    token = await gw.key()
    prefix, key_id, secret = token.split("_")
    forged = f"{prefix}_{key_id}_{'0' * 64 if secret != '0' * 64 else '1' * 64}"
    assert_problem(await gw.http.post("/v1/sql", json=SQL, headers=bearer(forged)), 401, "unauthorized")


async def test_an_unknown_key_is_unauthorized(gw: Gateway) -> None:
    assert_problem(await gw.http.post("/v1/sql", json=SQL, headers=bearer("nl2sql_0123456789ab_" + "ab" * 32)),
                   401, "unauthorized")


async def test_a_revoked_key_is_unauthorized(gw: Gateway) -> None:
    token = await gw.key()
    assert (await gw.http.post("/v1/sql", json=SQL, headers=bearer(token))).status_code == 200
    assert gw.state.store is not None
    revoked = await api_keys.revoke(gw.state.store.pool, token.split("_")[1])
    assert revoked is not None and revoked.revoked_at is not None
    body = assert_problem(await gw.http.post("/v1/sql", json=SQL, headers=bearer(token)), 401, "unauthorized")
    assert "revoked" in body["detail"]


async def test_the_store_keeps_only_a_hash_of_the_secret(gw: Gateway) -> None:
    token = await gw.key(name="hash-check")
    _, key_id, secret = token.split("_")
    assert gw.state.store is not None
    row = await gw.state.store.pool.fetchrow("SELECT * FROM api_keys WHERE id = $1", key_id)
    assert row is not None
    stored = " ".join(str(v) for v in row.values()) + bytes(row["secret_sha256"]).hex()
    assert secret not in stored and token not in stored


async def test_health_readiness_and_metrics_need_no_key(gw: Gateway) -> None:
    for path in sorted(PUBLIC_ROUTES - set(METADATA_PATHS)):
        assert (await gw.http.get(path)).status_code == 200, path
    # The OAuth protected-resource metadata needs no key either; without [auth.oidc] there is none.
    for path in METADATA_PATHS:
        assert_problem(await gw.http.get(path), 404, "not_found")


async def test_a_body_with_the_wrong_shape_is_still_refused_for_lack_of_a_key(gw: Gateway) -> None:
    assert_problem(await gw.http.post("/v1/sql", json={"nope": 1}), 401, "unauthorized")


# --- roles --------------------------------------------------------------------------------------------


async def test_a_client_may_not_manage_guidelines_or_read_schemas_and_a_dba_may(gw: Gateway) -> None:
    client, dba, admin = await gw.key("client"), await gw.key("dba"), await gw.key("admin")
    for path in ("/v1/guidelines", "/v1/databases/demo/schema"):
        body = assert_problem(await gw.http.get(path, headers=bearer(client)), 403, "forbidden")
        assert body["required_role"] == "dba"
        assert (await gw.http.get(path, headers=bearer(dba))).status_code == 200, path
        assert (await gw.http.get(path, headers=bearer(admin))).status_code == 200, path
    assert_problem(await gw.http.post("/v1/guidelines/regenerate", json={}, headers=bearer(client)), 403,
                   "forbidden")


async def test_every_client_route_is_open_to_a_client(gw: Gateway) -> None:
    client = await gw.key("client", databases=("demo",))
    assert (await gw.http.get("/v1/databases", headers=bearer(client))).status_code == 200
    assert (await gw.http.post("/v1/check", json={"sql": "SELECT 1"}, headers=bearer(client))).status_code == 200
    assert (await gw.http.post("/v1/sql", json=SQL, headers=bearer(client))).status_code == 200
    # Feedback is a client route: past auth it answers on its own terms (no such request), not 401/403.
    response = await gw.http.post("/v1/feedback", json={"request_id": "nope", "verdict": "correct"},
                                  headers=bearer(client))
    assert response.status_code not in {401, 403}, response.text


def test_every_route_has_a_decided_role_and_unknown_routes_need_admin(gw: Gateway) -> None:
    assert required_role("/v1/some-future-route") is Role.ADMIN
    assert required_role("/v1/guidelines/{version}/activate") is Role.DBA
    from fastapi.routing import APIRoute

    from gateway.api.app import create_app

    paths = {r.path for r in create_app(gw.state.settings).routes if isinstance(r, APIRoute)}
    undecided = {p for p in paths if p not in PUBLIC_ROUTES and p not in ROUTE_ROLES
                 and not any(k.endswith("*") and p.startswith(k[:-1]) for k in ROUTE_ROLES)}
    assert not undecided, f"routes that fall back to admin: decide their role in gateway/auth/access.py: {undecided}"


# --- databases ----------------------------------------------------------------------------------------


async def test_a_key_may_only_use_its_databases(gw: Gateway) -> None:
    demo_only = await gw.key("dba", databases=("demo",))
    other = {"database": "rls", "sql": "SELECT 1"}
    body = assert_problem(await gw.http.post("/v1/sql", json=other, headers=bearer(demo_only)), 403, "forbidden")
    assert body["database"] == "rls"
    assert_problem(await gw.http.post("/v1/check", json=other, headers=bearer(demo_only)), 403, "forbidden")
    assert_problem(await gw.http.get("/v1/databases/rls/schema", headers=bearer(demo_only)), 403, "forbidden")
    assert_problem(await gw.http.post("/v1/ask", json={"database": "rls", "question": "how many notes?"},
                                      headers=bearer(demo_only)), 403, "forbidden")
    # A database the key may not use is refused before the gateway says whether it exists.
    assert_problem(await gw.http.post("/v1/sql", json={**other, "database": "nope"}, headers=bearer(demo_only)),
                   403, "forbidden")
    assert (await gw.http.post("/v1/sql", json=SQL, headers=bearer(demo_only))).status_code == 200


async def test_the_database_list_shows_only_the_keys_databases(gw: Gateway) -> None:
    demo_only, everything = await gw.key(databases=("demo",)), await gw.key(databases=("*",))
    listed = (await gw.http.get("/v1/databases", headers=bearer(demo_only))).json()["databases"]
    assert [d["name"] for d in listed] == ["demo"]
    listed = (await gw.http.get("/v1/databases", headers=bearer(everything))).json()["databases"]
    assert sorted(d["name"] for d in listed) == ["demo", "rls"]
    # With every database allowed, an unknown one is a plain 404.
    assert_problem(await gw.http.post("/v1/sql", json={"database": "nope", "sql": "SELECT 1"},
                                      headers=bearer(everything)), 404, "unknown_database")


# --- Postgres roles -----------------------------------------------------------------------------------


async def sql_rows(gw: Gateway, token: str, sql: str, database: str = "demo") -> list[list[object]]:
    response = await gw.http.post("/v1/sql", json={"database": database, "sql": sql}, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()["rows"]  # type: ignore[no-any-return]


async def test_a_mapped_key_queries_as_its_postgres_role(gw: Gateway, roles: Roles) -> None:
    mapped, plain = await gw.key(pg_role=roles.bi), await gw.key()
    assert await sql_rows(gw, mapped, "SELECT current_user::text, session_user::text") == [[roles.bi, roles.reader]]
    assert await sql_rows(gw, mapped, "SELECT count(*) FROM regions") != [[0]]
    # The demo target has one pooled connection: the role must not outlive the request that assumed it.
    assert await sql_rows(gw, plain, "SELECT current_user::text") == [[roles.reader]]


async def test_a_mapped_role_without_a_grant_gets_permission_denied(gw: Gateway, roles: Roles) -> None:
    mapped, plain = await gw.key(pg_role=roles.bi), await gw.key()
    response = await gw.http.post("/v1/sql", json={"database": "demo", "sql": "SELECT count(*) FROM customers"},
                                  headers=bearer(mapped))
    body = assert_problem(response, 422, "query_error")
    assert body["sqlstate"] == "42501"
    # The gateway's own role may read it: the refusal came from the mapped role's GRANTs.
    assert await sql_rows(gw, plain, "SELECT count(*) > 0 FROM customers") == [[True]]


async def test_row_level_security_applies_to_the_mapped_role(gw: Gateway, roles: Roles) -> None:
    key_a, key_b, plain = (await gw.key(pg_role=roles.rls_a), await gw.key(pg_role=roles.rls_b),
                           await gw.key())
    query = "SELECT body FROM notes ORDER BY id"
    assert await sql_rows(gw, key_a, query, "rls") == [["a-one"], ["a-two"]]
    assert await sql_rows(gw, key_b, query, "rls") == [["b-one"]]
    assert await sql_rows(gw, plain, query, "rls") == []  # no policy lets the login role see any row


async def test_a_role_name_cannot_inject_sql(gw: Gateway) -> None:
    # Role names come from the key store, never from a request; they are quoted anyway.
    token = await gw.key(pg_role='x"; SET LOCAL ROLE NONE; --')
    body = assert_problem(await gw.http.post("/v1/sql", json=SQL, headers=bearer(token)), 422, "query_error")
    assert body["sqlstate"] == "22023"  # role does not exist: the whole name was read as one identifier


async def test_ask_runs_every_attempt_as_the_mapped_role(gw: Gateway, roles: Roles,
                                                         llm_server: ScriptedLLM) -> None:
    llm_server.reset()
    llm_server.add_reply("<sql>SELECT current_user::text AS who</sql>")
    try:
        token = await gw.key(pg_role=roles.bi, databases=("demo",))
        response = await gw.http.post("/v1/ask", json={"database": "demo", "question": "who am I?"},
                                      headers=bearer(token))
    finally:
        llm_server.reset()
    assert response.status_code == 200, response.text
    assert response.json()["rows"] == [[roles.bi]]
