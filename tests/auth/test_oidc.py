"""End users with OAuth access tokens over HTTP: a real app (real store, real Postgres) whose tokens come
from the test authorization server over real HTTP (gateway.testing.authserver). API keys keep working."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import jwt
import pytest

from gateway.api.app import create_app
from gateway.settings import BackpressureSettings, OidcSettings
from gateway.testing.authserver import AuthServer, _b64
from tests.auth.conftest import Gateway, Roles, auth_settings, bearer
from tests.auth.test_http import SQL, assert_problem


def oidc_settings(idp: AuthServer, **overrides: object) -> OidcSettings:
    return OidcSettings(**{  # type: ignore[arg-type]
        "issuer": idp.issuer, "audience": idp.audience, "role_claim": "role",
        "role_map": {"analyst": "client", "dba-group": "dba", "platform-admin": "admin"},
        "databases_claim": "databases", "policy_claims": {"tenant_id": "tenant_id", "region": "org.region"},
        **overrides})


@pytest.fixture(scope="module")
async def ogw(demo_dsn: str, store_dsn: str, idp_server: AuthServer, roles: Roles,
              tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    oidc = oidc_settings(idp_server, pg_role_claim="groups", pg_role_map={"bi-users": roles.bi})
    settings = auth_settings(demo_dsn, store_dsn, Path(tmp_path_factory.mktemp("oidc")), oidc=oidc)
    # Many refused tokens from one address in a row: the strangers' budget is not under test here.
    settings.backpressure = BackpressureSettings(unauthenticated_per_s=1000.0, unauthenticated_burst=100_000)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as http:
            yield Gateway(http, app.state.gateway)


async def test_alice_runs_sql_and_whoami_shows_her(ogw: Gateway, idp: AuthServer) -> None:
    token = idp.mint("alice")
    answer = await ogw.http.post("/v1/sql", json=SQL, headers=bearer(token))
    assert answer.status_code == 200, answer.text
    me = (await ogw.http.get("/v1/whoami", headers=bearer(token))).json()
    assert me == {"name": "alice", "role": "client", "databases": ["demo"], "auth_enabled": True, "user": "alice",
                  "client": "test-client", "scopes": ["nl2sql:ask", "nl2sql:query"],
                  "policy": {"region": "eu", "tenant_id": "1"}, "store": True}


async def test_roles_and_databases_come_from_mapped_claims(ogw: Gateway, idp: AuthServer) -> None:
    dana = (await ogw.http.get("/v1/whoami", headers=bearer(idp.mint("dana")))).json()
    assert dana["role"] == "admin" and dana["databases"] == ["*"]
    # Of several values the highest mapped one wins; unmapped values are ignored.
    several = idp.mint("alice", {"role": ["analyst", "dba-group", "superuser"]})
    assert (await ogw.http.get("/v1/whoami", headers=bearer(several))).json()["role"] == "dba"
    unmapped = idp.mint("alice", {"role": "admin"})  # the claim value is not a gateway role by itself
    assert (await ogw.http.get("/v1/whoami", headers=bearer(unmapped))).json()["role"] == "client"


async def test_a_token_without_mappings_is_a_client_with_no_database(ogw: Gateway, idp: AuthServer) -> None:
    carol = idp.mint("carol")
    me = (await ogw.http.get("/v1/whoami", headers=bearer(carol))).json()
    assert me["role"] == "client" and me["databases"] == [] and me["policy"] == {}
    assert_problem(await ogw.http.post("/v1/sql", json=SQL, headers=bearer(carol)), 403, "forbidden")
    # A client may not call a dba route either.
    assert_problem(await ogw.http.get("/v1/databases/demo/schema", headers=bearer(idp.mint("alice"))),
                   403, "forbidden")


async def test_postgres_role_only_through_the_allowlist(ogw: Gateway, idp: AuthServer, roles: Roles) -> None:
    who = {"database": "demo", "sql": "SELECT current_user AS u"}
    mapped = await ogw.http.post("/v1/sql", json=who, headers=bearer(idp.mint("alice", {"groups": ["bi-users"]})))
    assert mapped.json()["rows"] == [[roles.bi]], mapped.text
    # A claim that names a real role directly is not a role name: the login role stays.
    direct = await ogw.http.post("/v1/sql", json=who, headers=bearer(idp.mint("alice", {"groups": [roles.rls_a]})))
    assert direct.json()["rows"] == [[roles.reader]], direct.text


async def test_api_keys_keep_working_beside_tokens(ogw: Gateway) -> None:
    key = await ogw.key()
    assert (await ogw.http.post("/v1/sql", json=SQL, headers=bearer(key))).status_code == 200
    me = (await ogw.http.get("/v1/whoami", headers=bearer(key))).json()
    assert me["user"] is None and me["scopes"] is None
    # Anything shaped like a key is checked as a key, never as a token.
    bad_key = await ogw.http.post("/v1/sql", json=SQL, headers=bearer("nl2sql_0123456789ab_" + "0" * 63))
    assert_problem(bad_key, 401, "unauthorized")
    assert "invalid_token" not in bad_key.headers["www-authenticate"]


async def test_no_token_is_a_plain_bearer_challenge(ogw: Gateway) -> None:
    answer = await ogw.http.get("/v1/whoami")
    assert_problem(answer, 401, "unauthorized")
    # No error (nothing invalid was sent); the scopes to ask for and where the resource metadata is (RFC 9728),
    # for OAuth clients that discover the authorization server from the challenge (gateway.auth.resource).
    assert answer.headers["www-authenticate"] == (
        'Bearer realm="nl2sql-gateway", scope="nl2sql:schema nl2sql:query nl2sql:ask nl2sql:feedback", '
        'resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"')


# --- attacks: every one a 401 invalid_token, never a 500 ---------------------------------------------------

def attacks(idp: AuthServer) -> dict[str, str]:
    now = idp.mint("alice")
    header, payload, signature = now.split(".")
    return {
        "alg none": idp.mint("alice", alg="none"),
        "alg none, signature kept": f"{_b64(json.dumps({'alg': 'none', 'kid': 'rsa-1'}).encode())}.{payload}.{signature}",
        "HS256 keyed with the public key": idp.mint("alice", alg="HS256"),
        "HS256 keyed with the JWK's n": idp.mint("alice", alg="HS256", hmac_secret=idp.keys["rsa-1"].jwk["n"].encode()),
        "RS384 not allowed": idp.mint("alice", alg="RS384"),
        "ES256 signature claiming the RSA kid": idp.mint("alice", alg="ES256", kid="rsa-1"),
        "expired": idp.mint("alice", exp=1_000_000, iat=999_000, nbf=999_000),
        "not yet valid": idp.mint("alice", nbf=4_000_000_000),
        "issued in the future": idp.mint("alice", iat=4_000_000_000),
        "wrong issuer": idp.mint("alice", issuer="https://evil.example.com"),
        "issuer as a list": idp.mint("alice", issuer=[idp.issuer]),
        "wrong audience": idp.mint("alice", audience="another-api"),
        "audience as an object": idp.mint("alice", audience={"aud": idp.audience}),
        "no exp": idp.mint("alice", omit=("exp",)),
        "no aud": idp.mint("alice", omit=("aud",)),
        "no sub": idp.mint(None),
        "sub an object": idp.mint("alice", {"sub": {"id": "alice"}}),
        "exp a string": idp.mint("alice", exp="tomorrow"),
        "exp nested": idp.mint("alice", exp={"a": [1, {"b": 2}]}),
        "unknown kid": idp.mint("alice", kid="no-such-kid"),
        "kid a number": f"{_b64(json.dumps({'alg': 'RS256', 'kid': 7}).encode())}.{payload}.{signature}",
        "crit header": idp.mint("alice", headers={"crit": ["exp"], "exp": 1}),
        "tampered payload": f"{header}.{_b64(json.dumps({'sub': 'dana', 'role': 'platform-admin'}).encode())}.{signature}",
        "signature stripped": f"{header}.{payload}.",
        "garbage": "garbage",
        "bad base64": "!!!.@@@.###",
        "header a JSON list": f"{_b64(b'[1, 2]')}.{payload}.{signature}",
        "header not JSON": f"{_b64(b'{not json')}.{payload}.{signature}",
        "five segments (JWE)": f"{now}.{signature}.{signature}",
        "100 kB": idp.mint("alice", {"pad": "x" * 100_000}),
        "just over max_token_bytes": idp.mint("alice", {"pad": "x" * 16_000}),
    }


async def test_token_attacks_are_401_invalid_token(ogw: Gateway, idp: AuthServer) -> None:
    for name, token in attacks(idp).items():
        for route in ("/v1/whoami", "/v1/sql"):
            answer = await ogw.http.request("GET" if route == "/v1/whoami" else "POST", route,
                                            json=None if route == "/v1/whoami" else SQL, headers=bearer(token))
            body = assert_problem(answer, 401, "invalid_token")
            assert 'error="invalid_token"' in answer.headers["www-authenticate"], name
            assert token[:40] not in body["detail"], name  # the token is never echoed


async def test_an_exp_far_beyond_any_clock_is_accepted_without_overflow(ogw: Gateway, idp: AuthServer) -> None:
    # The issuer signed it, so it is valid; the cache bounds its own lifetime (no float overflow, no 500).
    answer = await ogw.http.get("/v1/whoami", headers=bearer(idp.mint("alice", exp=10**400)))
    assert answer.status_code == 200, answer.text


async def test_payloads_that_are_not_objects_or_too_deep_are_refused(ogw: Gateway, idp: AuthServer) -> None:
    signer = idp.keys["rsa-1"].private
    for payload in (b"[1, 2]", b'"alice"', b"null", b'{"exp": 1e400, "sub": "alice"}',
                    b'{"sub": "alice", "x": ' + b"[" * 3000 + b"]" * 3000 + b"}"):
        token = jwt.api_jws.PyJWS().encode(payload, signer, algorithm="RS256", headers={"kid": "rsa-1"})
        answer = await ogw.http.get("/v1/whoami", headers=bearer(token))
        assert_problem(answer, 401, "invalid_token")


async def test_foreign_key_urls_in_the_header_are_never_fetched(ogw: Gateway, idp: AuthServer) -> None:
    with AuthServer() as attacker:
        own = attacker.mint("dana", {"role": "platform-admin"}, issuer=idp.issuer)
        kid = attacker.current["RSA"]
        for headers in ({"jku": attacker.jwks_url}, {"x5u": attacker.jwks_url},
                        {"jwk": attacker.keys[kid].jwk}, {"x5c": ["MIIB"]}):
            token = attacker.mint("dana", {"role": "platform-admin"}, issuer=idp.issuer, headers=headers)
            answer = await ogw.http.get("/v1/whoami", headers=bearer(token))
            assert_problem(answer, 401, "invalid_token")
            # Even with a legitimate kid, the attacker's signature fails.
            relabelled = attacker.mint("dana", issuer=idp.issuer, headers={**headers, "kid": "rsa-1"})
            assert_problem(await ogw.http.get("/v1/whoami", headers=bearer(relabelled)), 401, "invalid_token")
        assert_problem(await ogw.http.get("/v1/whoami", headers=bearer(own)), 401, "invalid_token")
        assert sum(attacker.hits.values()) == 0


async def test_a_key_that_was_never_published_to_the_app_is_refused(ogw: Gateway, idp: AuthServer) -> None:
    # The module's app saw rsa-1 published; a key never published (stolen, revoked before use) is refused.
    ghost = idp.rotate()
    idp.retire(ghost)
    token = idp.mint("alice", kid=ghost)
    assert_problem(await ogw.http.get("/v1/whoami", headers=bearer(token)), 401, "invalid_token")
