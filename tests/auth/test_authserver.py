"""The test authorization server (gateway.testing.authserver) does what the OAuth 2.1 flow needs, over HTTP:
metadata, JWKS, registration, PKCE S256, single-use codes, refresh, redirect_uri checks, introspection."""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from gateway.testing.authserver import AuthServer, authorization_url, pkce_pair

REDIRECT = "http://127.0.0.1:9/callback"


def register(idp: AuthServer, http: httpx.Client, redirect: str = REDIRECT) -> str:
    answer = http.post(f"{idp.issuer}/register", json={
        "redirect_uris": [redirect], "client_name": "test", "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"]})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


def authorize(idp: AuthServer, http: httpx.Client, client_id: str, challenge: str,
              redirect: str = REDIRECT) -> dict[str, list[str]]:
    answer = http.get(authorization_url(idp, client_id, redirect, challenge, state="s1",
                                        scope="nl2sql:query offline_access"))
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(redirect)
    return parse_qs(urlsplit(location).query)


def exchange(idp: AuthServer, http: httpx.Client, client_id: str, code: str, verifier: str) -> httpx.Response:
    return http.post(f"{idp.issuer}/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
        "code_verifier": verifier})


def verify(idp: AuthServer, token: str) -> dict[str, object]:
    key = jwt.PyJWKClient(idp.jwks_url).get_signing_key_from_jwt(token)
    return jwt.decode(token, key.key, algorithms=["RS256", "ES256"], audience=idp.audience, issuer=idp.issuer)


@pytest.fixture
def http() -> httpx.Client:
    return httpx.Client(timeout=10)


@pytest.mark.parametrize("path", ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"])
def test_metadata_names_every_endpoint(idp: AuthServer, http: httpx.Client, path: str) -> None:
    meta = http.get(idp.issuer + path).json()
    assert meta["issuer"] == idp.issuer and meta["jwks_uri"] == idp.jwks_url
    assert meta["code_challenge_methods_supported"] == ["S256"]
    for endpoint in ("authorization_endpoint", "token_endpoint", "registration_endpoint", "introspection_endpoint"):
        assert meta[endpoint].startswith(idp.issuer)
    assert "refresh_token" in meta["grant_types_supported"]


def test_code_flow_with_pkce_issues_a_verifiable_token_for_the_logged_in_user(idp: AuthServer,
                                                                              http: httpx.Client) -> None:
    client_id = register(idp, http)
    verifier, challenge = pkce_pair()
    idp.login_as("bob")
    query = authorize(idp, http, client_id, challenge)
    assert query["state"] == ["s1"]
    tokens = exchange(idp, http, client_id, query["code"][0], verifier)
    assert tokens.status_code == 200, tokens.text
    claims = verify(idp, tokens.json()["access_token"])
    assert claims["sub"] == "bob" and claims["tenant_id"] == 2 and claims["client_id"] == client_id
    assert claims["scope"] == "nl2sql:query offline_access"
    # The code is single use.
    again = exchange(idp, http, client_id, query["code"][0], verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    # Refresh: a new access token, and the refresh token rotates (the old one is spent).
    refresh = tokens.json()["refresh_token"]
    renewed = http.post(f"{idp.issuer}/token", data={"grant_type": "refresh_token", "refresh_token": refresh,
                                                     "client_id": client_id})
    assert renewed.status_code == 200 and verify(idp, renewed.json()["access_token"])["sub"] == "bob"
    spent = http.post(f"{idp.issuer}/token", data={"grant_type": "refresh_token", "refresh_token": refresh,
                                                   "client_id": client_id})
    assert spent.status_code == 400


def test_wrong_pkce_verifier_and_foreign_redirect_are_refused(idp: AuthServer, http: httpx.Client) -> None:
    client_id = register(idp, http)
    _, challenge = pkce_pair()
    other_verifier, _ = pkce_pair()
    query = authorize(idp, http, client_id, challenge)
    wrong = exchange(idp, http, client_id, query["code"][0], other_verifier)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    foreign = http.get(authorization_url(idp, client_id, "http://127.0.0.1:9/elsewhere", challenge))
    assert foreign.status_code == 400 and "location" not in foreign.headers


def test_nobody_logged_in_denies(idp: AuthServer, http: httpx.Client) -> None:
    client_id = register(idp, http)
    idp.login_as(None)
    answer = http.get(authorization_url(idp, client_id, REDIRECT, pkce_pair()[1]))
    assert parse_qs(urlsplit(answer.headers["location"]).query)["error"] == ["access_denied"]


def test_a_public_browser_client_posts_its_code_cross_origin_and_revokes_its_refresh_token(
        idp: AuthServer, http: httpx.Client) -> None:
    console = "http://127.0.0.1:9"  # the console's origin, not the authorization server's
    idp.add_client("console", [REDIRECT])
    other = register(idp, http)
    verifier, challenge = pkce_pair()
    code = authorize(idp, http, "console", challenge)["code"][0]
    answer = http.post(f"{idp.issuer}/token", headers={"Origin": console}, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": "console",
        "code_verifier": verifier})
    assert answer.status_code == 200, answer.text
    assert answer.headers["access-control-allow-origin"] == "*"  # a browser may read the answer
    refresh = answer.json()["refresh_token"]
    # Another client cannot revoke it (answered 200 as RFC 7009 asks, but the token stays good).
    assert http.post(f"{idp.issuer}/revoke", data={"token": refresh, "client_id": other}).status_code == 200
    assert refresh in idp.refresh_tokens
    assert http.post(f"{idp.issuer}/revoke", data={"token": refresh, "client_id": "nobody"}).status_code == 401
    revoked = http.post(f"{idp.issuer}/revoke", headers={"Origin": console},
                        data={"token": refresh, "token_type_hint": "refresh_token", "client_id": "console"})
    assert revoked.status_code == 200 and revoked.headers["access-control-allow-origin"] == "*"
    assert refresh not in idp.refresh_tokens
    spent = http.post(f"{idp.issuer}/token", data={"grant_type": "refresh_token", "refresh_token": refresh,
                                                  "client_id": "console"})
    assert spent.status_code == 400 and spent.json()["error"] == "invalid_grant"
    # A confidential client must authenticate to revoke.
    idp.add_client("backend", [REDIRECT], secret="s3cret")
    assert http.post(f"{idp.issuer}/revoke", data={"token": "x", "client_id": "backend"}).status_code == 401
    assert http.post(f"{idp.issuer}/revoke", data={"token": "x", "client_id": "backend",
                                                  "client_secret": "s3cret"}).status_code == 200


def test_rotation_publishes_both_keys_until_the_old_one_is_retired(idp: AuthServer, http: httpx.Client) -> None:
    old = idp.mint("alice")
    new_kid = idp.rotate()
    assert jwt.get_unverified_header(idp.mint("alice"))["kid"] == new_kid
    kids = [k["kid"] for k in http.get(idp.jwks_url).json()["keys"]]
    assert kids == ["rsa-1", "ec-1", new_kid]
    idp.retire("rsa-1")
    assert [k["kid"] for k in http.get(idp.jwks_url).json()["keys"]] == ["ec-1", new_kid]
    assert idp.jwks_fetches == 2
    # A retired key still signs (a revoked key in an attacker's hands) but nobody can verify it any more.
    assert jwt.get_unverified_header(idp.mint("alice", kid="rsa-1"))["kid"] == "rsa-1"
    with pytest.raises(jwt.PyJWKClientError):
        verify(idp, old)


def test_introspection_needs_the_client_and_explains_opaque_tokens(idp: AuthServer, http: httpx.Client) -> None:
    active = idp.mint_opaque("alice", scope="nl2sql:query")
    inactive = idp.mint_opaque("alice", active=False)
    assert http.post(idp.introspection_url, data={"token": active}).status_code == 401
    auth = ("gateway", "gateway-secret")
    record = http.post(idp.introspection_url, data={"token": active}, auth=auth).json()
    assert record["active"] is True and record["sub"] == "alice" and record["tenant_id"] == 1
    assert record["scope"] == "nl2sql:query" and record["aud"] == idp.audience
    assert http.post(idp.introspection_url, data={"token": inactive}, auth=auth).json() == {"active": False}
    assert http.post(idp.introspection_url, data={"token": "nonsense"}, auth=auth).json() == {"active": False}


def test_mint_makes_the_malicious_shapes_it_promises(idp: AuthServer) -> None:
    unsigned = idp.mint("alice", alg="none")
    assert unsigned.endswith(".") and jwt.get_unverified_header(unsigned)["alg"] == "none"
    confused = idp.mint("alice", alg="HS256")
    # The HMAC key is the published public key's PEM: what a confused verifier would use.
    signing_input, _, signature = confused.rpartition(".")
    expected = hmac.new(idp.keys["rsa-1"].public_pem, signing_input.encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64decode(signature + "==") == expected
    assert jwt.get_unverified_header(confused)["alg"] == "HS256"
    foreign = idp.mint("alice", headers={"jku": "http://127.0.0.1:1/jwks"})
    assert jwt.get_unverified_header(foreign)["jku"] == "http://127.0.0.1:1/jwks"
    assert "exp" not in jwt.decode(idp.mint("alice", omit=("exp",)), options={"verify_signature": False})
