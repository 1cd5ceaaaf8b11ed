"""The OIDC validator's keys and caches, against the test authorization server over real HTTP: rotation,
refresh limits, discovery, outages, introspection, scopes and the validated-token cache."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from gateway import errors
from gateway.auth import Authenticator
from gateway.auth.oidc import OidcValidator, principal_from_claims
from gateway.settings import AuthSettings, IntrospectionSettings, OidcSettings
from gateway.testing.authserver import AuthServer


def settings(idp: AuthServer, **overrides: Any) -> OidcSettings:
    return OidcSettings(**{"issuer": idp.issuer, "audience": idp.audience, "jwks_url": idp.jwks_url,
                           "policy_claims": {"tenant_id": "tenant_id"}, **overrides})


@pytest.fixture
async def validator(idp: AuthServer) -> Any:
    v = OidcValidator(settings(idp, token_cache_ttl_s=0))
    yield v
    await v.aclose()


async def test_a_token_with_a_new_kid_fetches_the_keys_once_then_works(idp: AuthServer,
                                                                       validator: OidcValidator) -> None:
    assert (await validator.authenticate(idp.mint("alice"))).user == "alice"
    assert idp.jwks_fetches == 1
    for _ in range(3):
        await validator.authenticate(idp.mint("alice"))
    assert idp.jwks_fetches == 1  # warm cache: no fetch per token
    validator.settings = settings(idp, token_cache_ttl_s=0, jwks_refresh_interval_s=0)
    new_kid = idp.rotate()
    assert (await validator.authenticate(idp.mint("bob", kid=new_kid))).user == "bob"
    assert idp.jwks_fetches == 2
    await validator.authenticate(idp.mint("bob", kid=new_kid))
    await validator.authenticate(idp.mint("alice", kid="rsa-1"))  # the old key is still published
    assert idp.jwks_fetches == 2


async def test_a_burst_of_unknown_kids_fetches_at_most_once_per_interval(idp: AuthServer,
                                                                         validator: OidcValidator) -> None:
    await validator.authenticate(idp.mint("alice"))
    assert idp.jwks_fetches == 1
    validator.settings = settings(idp, token_cache_ttl_s=0, jwks_refresh_interval_s=0)
    tokens = [idp.mint("alice", kid=f"forged-{i}") for i in range(50)]
    results = await asyncio.gather(*(validator.authenticate(t) for t in tokens), return_exceptions=True)
    assert all(isinstance(r, errors.InvalidToken) and "forged-" in r.detail for r in results)
    assert idp.jwks_fetches == 2  # fifty concurrent misses shared one fetch
    validator.settings = settings(idp, token_cache_ttl_s=0, jwks_refresh_interval_s=3600)
    for token in tokens:
        with pytest.raises(errors.InvalidToken):
            await validator.authenticate(token)
    assert idp.jwks_fetches == 2  # within the interval: no fetch at all
    # Not even a real new key is fetched within the interval: it works after it.
    new_kid = idp.rotate()
    with pytest.raises(errors.InvalidToken, match="not among the issuer's published keys"):
        await validator.authenticate(idp.mint("alice", kid=new_kid))
    assert idp.jwks_fetches == 2


async def test_rotated_out_and_retired_key_is_refused(idp: AuthServer) -> None:
    v = OidcValidator(settings(idp, token_cache_ttl_s=0, jwks_cache_ttl_s=0.001, jwks_refresh_interval_s=0))
    try:
        old_token = idp.mint("alice")
        assert (await v.authenticate(old_token)).user == "alice"
        idp.rotate()
        idp.retire("rsa-1")
        await asyncio.sleep(0.01)  # past the (tiny) JWKS TTL: the next token refetches the keys
        assert (await v.authenticate(idp.mint("alice"))).user == "alice"
        with pytest.raises(errors.InvalidToken, match="'rsa-1' is not among"):
            await v.authenticate(old_token)
        with pytest.raises(errors.InvalidToken, match="'rsa-1' is not among"):
            await v.authenticate(idp.mint("alice", kid="rsa-1"))  # signed with the retired private key
    finally:
        await v.aclose()


async def test_es256_tokens_and_key_type_mismatch(idp: AuthServer, validator: OidcValidator) -> None:
    assert (await validator.authenticate(idp.mint("alice", alg="ES256"))).user == "alice"
    with pytest.raises(errors.InvalidToken, match="does not fit key 'ec-1'"):
        await validator.authenticate(idp.mint("alice", alg="RS256", kid="ec-1"))


async def test_a_jwks_outage_keeps_the_cached_keys(idp: AuthServer) -> None:
    v = OidcValidator(settings(idp, token_cache_ttl_s=0, jwks_cache_ttl_s=0.001, jwks_refresh_interval_s=0))
    try:
        await v.authenticate(idp.mint("alice"))
        idp.jwks_down = True
        await asyncio.sleep(0.01)
        assert (await v.authenticate(idp.mint("bob"))).user == "bob"  # stale keys, fetch failed, still valid
        assert idp.jwks_fetches == 2
        with pytest.raises(errors.IdentityProviderUnavailable):  # a key we cannot know yet: 503, not 401
            await v.authenticate(idp.mint("bob", kid=idp.rotate()))
    finally:
        await v.aclose()


async def test_cold_outage_is_503(idp: AuthServer) -> None:
    idp.jwks_down = True
    v = OidcValidator(settings(idp))
    try:
        with pytest.raises(errors.IdentityProviderUnavailable):
            await v.authenticate(idp.mint("alice"))
    finally:
        await v.aclose()


async def test_discovery_finds_the_keys(idp: AuthServer) -> None:
    v = OidcValidator(settings(idp, jwks_url=None))
    try:
        assert (await v.authenticate(idp.mint("alice"))).user == "alice"
        assert idp.hits["/.well-known/openid-configuration"] == 1 and idp.jwks_fetches == 1
    finally:
        await v.aclose()


async def test_discovery_refuses_metadata_of_another_issuer(idp: AuthServer) -> None:
    # The same server under another name: its metadata names 127.0.0.1, not the configured issuer.
    other = idp.issuer.replace("127.0.0.1", "localhost")
    v = OidcValidator(settings(idp, jwks_url=None, issuer=other))
    try:
        with pytest.raises(errors.IdentityProviderUnavailable):
            await v.authenticate(idp.mint("alice", issuer=other))
        assert idp.hits["/.well-known/openid-configuration"] == 1
        assert idp.hits["/.well-known/oauth-authorization-server"] == 1
        assert idp.jwks_fetches == 0
    finally:
        await v.aclose()


async def test_introspection_of_opaque_tokens(idp: AuthServer) -> None:
    intro = IntrospectionSettings(url=idp.introspection_url, client_id="gateway", secret="gateway-secret")
    v = OidcValidator(settings(idp, introspection=intro, token_cache_ttl_s=0))
    try:
        alice = await v.authenticate(idp.mint_opaque("alice", scope="nl2sql:query"))
        assert alice.user == "alice" and alice.scopes == frozenset({"nl2sql:query"})
        assert alice.policy == {"tenant_id": "1"}
        with pytest.raises(errors.InvalidToken, match="not active"):
            await v.authenticate(idp.mint_opaque("alice", active=False))
        with pytest.raises(errors.InvalidToken, match="not active"):
            await v.authenticate("opq_never_issued")
        with pytest.raises(errors.InvalidToken, match="another audience"):
            await v.authenticate(idp.mint_opaque("alice", audience="another-api"))
        assert idp.hits["/introspect"] == 4
    finally:
        await v.aclose()
    wrong_secret = OidcValidator(settings(idp, introspection=intro.model_copy(update={"secret": None})))
    try:
        with pytest.raises(errors.IdentityProviderUnavailable):
            await wrong_secret.authenticate(idp.mint_opaque("alice"))
    finally:
        await wrong_secret.aclose()


async def test_opaque_tokens_without_introspection_are_refused(idp: AuthServer, validator: OidcValidator) -> None:
    with pytest.raises(errors.InvalidToken, match="neither a gateway API key nor a JWT"):
        await validator.authenticate(idp.mint_opaque("alice"))
    assert idp.hits["/introspect"] == 0


async def test_validated_tokens_are_cached_but_never_past_exp(idp: AuthServer) -> None:
    v = OidcValidator(settings(idp, token_cache_ttl_s=60))
    try:
        token = idp.mint("alice")
        assert not v.known(token)
        first = await v.authenticate(token)
        assert v.known(token) and await v.authenticate(token) is first
        # A token about to expire is cached only until its exp (leeway does not extend the cache).
        short = idp.mint("alice", exp=int(time.time()) - 1)
        await v.authenticate(short)  # valid within the leeway
        assert not v.known(short)
    finally:
        await v.aclose()


async def test_the_authenticator_sends_tokens_to_oidc_and_keys_to_the_store(idp: AuthServer) -> None:
    auth = Authenticator(AuthSettings(oidc=settings(idp)), lambda: None)
    try:
        token = idp.mint("alice")
        assert not auth.known(f"Bearer {token}")
        assert (await auth.authenticate(f"Bearer {token}")).user == "alice"
        assert auth.known(f"Bearer {token}")  # admission lets a cached valid token past the strangers' budget
        with pytest.raises(errors.Unauthorized) as refused:
            await auth.authenticate("Bearer nl2sql_junk")
        assert refused.value.code == "unauthorized"
    finally:
        await auth.aclose()


def test_principal_mapping_edge_cases(idp: AuthServer) -> None:
    s = settings(idp, policy_claims={"tenant": "tenant_id", "region": "org.region", "flag": "beta",
                                     "url_named": "https://acme.example/team", "listy": "groups"},
                 log_email=True, required_scopes=["nl2sql:query"])
    claims = {"sub": "u1", "email": "u1@example.com", "scope": "nl2sql:query", "tenant_id": 7,
              "org": {"region": "eu"}, "beta": True, "https://acme.example/team": "core", "groups": ["a", "b"],
              "azp": "console"}
    p = principal_from_claims(s, claims)
    assert p.name == "u1@example.com" and p.user == "u1" and p.client == "console"
    assert p.claims == (("flag", "true"), ("region", "eu"), ("tenant", "7"), ("url_named", "core"))
    for bad in ([1], {"x": 1}, 1.5, None):  # not a string, integer or boolean: the claim counts as missing
        assert "tenant" not in principal_from_claims(s, {**claims, "tenant_id": bad}).policy
    entra = principal_from_claims(s, {**claims, "scope": None, "scp": "nl2sql:query User.Read"})
    assert entra.scopes == frozenset({"nl2sql:query", "User.Read"})
    with pytest.raises(errors.InsufficientScope):
        principal_from_claims(s, {**claims, "scope": "openid"})
    with pytest.raises(errors.InvalidToken):
        principal_from_claims(s, {**claims, "sub": ""})


async def test_a_fresh_token_signed_with_a_held_key_passes_admission(idp: AuthServer) -> None:
    """An address that spent its budget of refused requests (a browser's favicon requests, a shared NAT) can
    still bring a token it just got: admission lets a JWT naming a key this replica holds go on to its
    signature check. Nothing that needs a network round trip, nor a header the validator refuses, does."""
    v = OidcValidator(settings(idp))
    try:
        await v.authenticate(idp.mint("alice"))  # the JWKS is warm
        fresh = idp.mint("bob")
        assert v.known(fresh)
        assert not v.known(idp.mint("bob", kid="no-such-kid"))
        assert not v.known(idp.mint("bob", headers={"jku": "http://127.0.0.1:9/keys"}))
        assert not v.known(idp.mint("bob", alg="none"))
        assert not v.known(idp.mint_opaque("bob"))
        assert not v.known("a.b")
        forged = fresh.rsplit(".", 1)[0] + ".AAAA"
        assert v.known(forged)  # admitted to the check, which refuses it
        with pytest.raises(errors.InvalidToken):
            await v.authenticate(forged)
    finally:
        await v.aclose()
