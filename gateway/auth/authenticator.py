"""Who is calling: a bearer token checked against the store's API keys, through a short-lived cache, or,
with ``[auth.oidc]``, an end user's OAuth access token (gateway.auth.oidc) when it is not shaped like a key.

The cache keeps each lookup (a key, or "no such key") for ``auth.cache_ttl_s`` seconds, so the hot path
costs no store round trip; a revoked key therefore stops working within that time. When the store does not
answer, keys seen before keep working from the cache (even past their TTL) and unknown ones answer
``store_unavailable``: an outage of the store does not lock out every client, and never lets a stranger in.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from gateway import errors
from gateway.auth.keys import ANONYMOUS, PREFIX, Principal, Role, parse_token, secret_matches
from gateway.auth.oidc import OidcValidator
from gateway.observability.logging import get_logger
from gateway.settings import AuthSettings, ConfigError, Settings
from gateway.store import Store, api_keys
from gateway.store.api_keys import StoredKey

log = get_logger(__name__)

LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings) -> None:
    """Refuse settings that would serve without access control beyond loopback, or without a key store."""
    if not settings.auth.enabled:
        if not is_loopback(settings.server.host):
            raise ConfigError(
                f"auth.enabled is false but server.host is {settings.server.host!r}: without API keys the "
                "gateway only listens on a loopback address (127.0.0.1, ::1, localhost); turn auth on "
                "(NL2SQL_AUTH__ENABLED=true) or listen on 127.0.0.1"
            )
        return
    if not settings.store.dsn and settings.auth.oidc is None:
        raise ConfigError("auth.enabled (on by default) needs store.dsn: API keys live in the store database. "
                          "Set store.dsn (NL2SQL_STORE__DSN), or for local use on 127.0.0.1 turn auth off "
                          "(auth.enabled = false) or run `nl2sql-gateway serve --dsn postgresql://...`; with "
                          "[auth.oidc] alone, end users' tokens need no store")


@dataclass(slots=True)
class _Entry:
    key: StoredKey | None
    fetched: float


class Authenticator:
    """Turns an ``Authorization`` header into a :class:`Principal`, or raises ``unauthorized``."""

    def __init__(self, settings: AuthSettings, store: Callable[[], Store | None]) -> None:
        self.settings = settings
        self._store = store  # looked up per miss: the store may be reopened while the gateway runs
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        # End users' access tokens ([auth.oidc]): anything that is not shaped like an API key goes there.
        self.oidc = OidcValidator(settings.oidc) if settings.oidc is not None else None

    async def authenticate(self, authorization: str | None) -> Principal:
        if not self.settings.enabled:
            return ANONYMOUS
        token = _bearer_token(authorization)
        if self.oidc is not None and not _is_api_key(token):
            return await self.oidc.authenticate(token)
        key_id, secret = parse_token(token)
        stored = await self._lookup(key_id)
        # Check the secret before saying anything about the key, so only its holder learns it was revoked.
        if stored is None or not secret_matches(secret, stored.secret_sha256):
            raise errors.Unauthorized("the API key is not valid")
        if stored.revoked_at is not None:
            raise errors.Unauthorized(f"API key {stored.name!r} was revoked")
        return Principal(name=stored.name, role=Role(stored.role), databases=frozenset(stored.databases),
                         pg_role=stored.pg_role, key_id=stored.id)

    def known(self, authorization: str | None) -> bool:
        """True when the header holds a key this replica has seen valid (cached, even past its TTL).

        No store round trip: admission asks this to let a valid key through while the address it comes
        from has spent its budget of refused requests (:class:`gateway.serving.backpressure.Strangers`).
        """
        if not self.settings.enabled:
            return True
        try:
            token = _bearer_token(authorization)
            if self.oidc is not None and not _is_api_key(token):
                return self.oidc.known(token)
            key_id, secret = parse_token(token)
        except errors.Unauthorized:
            return False
        entry = self._cache.get(key_id)
        return (entry is not None and entry.key is not None and entry.key.revoked_at is None
                and secret_matches(secret, entry.key.secret_sha256))

    async def aclose(self) -> None:
        """Close the connections to the authorization server (the gateway is stopping)."""
        if self.oidc is not None:
            await self.oidc.aclose()

    def forget(self, key_id: str | None = None) -> None:
        """Drop cached lookups (one key, or all): the next request asks the store."""
        if key_id is None:
            self._cache.clear()
        else:
            self._cache.pop(key_id, None)

    async def _lookup(self, key_id: str) -> StoredKey | None:
        now = time.monotonic()
        entry = self._cache.get(key_id)
        if entry is not None and now - entry.fetched < self.settings.cache_ttl_s:
            return entry.key
        store = self._store()
        try:
            if store is None:
                raise errors.StoreUnavailable("the store is not open; API keys cannot be checked")
            async with asyncio.timeout(self.settings.lookup_timeout_s):
                key = await api_keys.get(store.pool, key_id)
        except (errors.StoreUnavailable, TimeoutError) as exc:
            if entry is not None and entry.key is not None:
                log.warning("auth_store_unavailable_using_cached_key", key_id=key_id)
                return entry.key
            if isinstance(exc, errors.StoreUnavailable):
                raise
            raise errors.StoreUnavailable("the store did not answer in time; API keys cannot be checked") from exc
        self._remember(key_id, _Entry(key, now))
        return key

    def _remember(self, key_id: str, entry: _Entry) -> None:
        self._cache[key_id] = entry
        self._cache.move_to_end(key_id)
        while len(self._cache) > self.settings.cache_max_keys:
            self._cache.popitem(last=False)  # random ids cannot grow memory without bound


def _is_api_key(token: str) -> bool:
    """Shaped like a gateway API key (``nl2sql_...``): checked as one, never sent to the OIDC validator."""
    return token.startswith(PREFIX + "_")


def _bearer_token(authorization: str | None) -> str:
    if not authorization or not authorization.strip():
        raise errors.Unauthorized("send an API key as 'Authorization: Bearer <key>'")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise errors.Unauthorized("the Authorization header must read 'Bearer <key>'")
    return token.strip()
