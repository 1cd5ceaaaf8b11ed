"""The key cache: no store round trip within the TTL, revocation within it, and store outages."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gateway import errors
from gateway.api.app import create_app
from gateway.auth import Authenticator, new_token
from gateway.settings import AuthSettings, StoreSettings
from gateway.store import Store, api_keys
from tests.auth.conftest import auth_settings, bearer
from tests.conftest import PgServer


async def make_key(store: Store, name: str) -> str:
    token = new_token()
    await api_keys.create(store.pool, key_id=token.key_id, name=name, role="client", databases=["*"],
                          pg_role=None, secret_sha256=token.secret_sha256)
    return token.token


@pytest.fixture
async def store(fresh_db: str):  # type: ignore[no-untyped-def]
    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        yield store
    finally:
        await store.close()


async def test_a_cached_key_is_reused_until_the_ttl_and_forgotten_on_demand(store: Store) -> None:
    auth = Authenticator(AuthSettings(cache_ttl_s=3600), lambda: store)
    token = await make_key(store, "cached")
    principal = await auth.authenticate(f"Bearer {token}")
    assert principal.name == "cached"
    await api_keys.revoke(store.pool, token.split("_")[1])
    # Within the TTL the revocation is not seen yet (documented: a revoked key works for up to cache_ttl_s).
    assert (await auth.authenticate(f"Bearer {token}")).name == "cached"
    auth.forget(token.split("_")[1])
    with pytest.raises(errors.Unauthorized, match="revoked"):
        await auth.authenticate(f"Bearer {token}")


async def test_a_ttl_of_zero_asks_the_store_every_time(store: Store) -> None:
    auth = Authenticator(AuthSettings(cache_ttl_s=0), lambda: store)
    token = await make_key(store, "uncached")
    await auth.authenticate(f"Bearer {token}")
    await api_keys.revoke(store.pool, token.split("_")[1])
    with pytest.raises(errors.Unauthorized):
        await auth.authenticate(f"Bearer {token}")


async def test_a_wrong_secret_is_refused_even_when_the_key_is_cached(store: Store) -> None:
    auth = Authenticator(AuthSettings(cache_ttl_s=3600), lambda: store)
    token = await make_key(store, "victim")
    await auth.authenticate(f"Bearer {token}")
    forged = token[:-1] + ("0" if token[-1] != "0" else "1")
    with pytest.raises(errors.Unauthorized):
        await auth.authenticate(f"Bearer {forged}")


async def test_unknown_ids_cannot_grow_the_cache_without_bound(store: Store) -> None:
    auth = Authenticator(AuthSettings(cache_ttl_s=3600, cache_max_keys=5), lambda: store)
    for _ in range(20):
        with pytest.raises(errors.Unauthorized):
            await auth.authenticate(f"Bearer {new_token().token}")
    assert len(auth._cache) == 5


async def test_auth_off_lets_everyone_in_as_admin_without_a_store() -> None:
    auth = Authenticator(AuthSettings(enabled=False), lambda: None)
    principal = await auth.authenticate(None)
    assert principal.role.value == "admin" and principal.may_use("anything")


async def test_store_down_known_keys_keep_working_unknown_ones_get_503(
    pg: PgServer, demo_dsn: str, fresh_db: str, tmp_path: Path,
) -> None:
    app = create_app(auth_settings(demo_dsn, fresh_db, tmp_path))  # cache_ttl_s=0: every request asks the store
    async with app.router.lifespan_context(app):
        state = app.state.gateway
        known = await make_key(state.store, "known")
        stranger = await make_key(state.store, "stranger")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            assert (await http.get("/v1/databases", headers=bearer(known))).status_code == 200
            with pg.stopped():
                response = await http.get("/v1/databases", headers=bearer(known))
                assert response.status_code == 200, response.text  # from the cache, past its TTL
                response = await http.get("/v1/databases", headers=bearer(stranger))
                assert response.status_code == 503, response.text
                assert response.json()["code"] == "store_unavailable"
                assert "retry-after" in response.headers
                response = await http.get("/v1/databases")
                assert response.status_code == 401  # no key is still no key
            # Back up: the store answers again at once (its pool replaces the connections the restart closed).
            response = await http.get("/v1/databases", headers=bearer(stranger))
            assert response.status_code == 200, response.text
