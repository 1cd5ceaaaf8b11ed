"""End users: OAuth 2.1 / OIDC access tokens checked as a resource server, beside API keys.

A JWT access token is verified with PyJWT against the issuer's published keys (JWKS), which are fetched
with httpx2 and cached: the key is found by the token's ``kid`` in that cache only. Nothing in the token
chooses a key or where keys come from: tokens carrying ``jku``, ``x5u``, ``jwk``, ``x5c`` or ``crit`` are
refused, and the ``alg`` must be in ``auth.oidc.algorithms`` (asymmetric only) and fit the key's type, so an
HS256 token "signed" with the public key never verifies. An unknown ``kid`` fetches the keys again at most
once per ``jwks_refresh_interval_s`` (concurrent misses share the fetch); a failed fetch keeps the cached
keys, so an outage of the authorization server does not lock out users whose keys are known.

Opaque tokens (not JWTs) are checked by RFC 7662 introspection when ``auth.oidc.introspection`` is set.

Every way a token can be wrong answers 401 ``invalid_token`` whose detail says why; the authorization
server being unreachable when it must be asked answers 503 ``idp_unavailable``. A validated token's
principal is cached for ``token_cache_ttl_s`` (never past ``exp``), keyed by the token's SHA-256.

The end user is the token's ``user_claim`` (``sub``) as it stands: one gateway trusts one issuer, whose
subject ids are stable and unique, so they are not prefixed with the issuer (changing ``issuer`` therefore
makes every user a new one).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2  # the HTTP client the openai and mcp SDKs bring (a core dependency through them)
import jwt

from gateway import errors
from gateway.auth.keys import Principal, Role
from gateway.observability.logging import get_logger
from gateway.settings import OidcSettings

log = get_logger(__name__)

# Header members that would let a token name its own key or demand processing we do not do.
_REFUSED_HEADERS = ("jku", "x5u", "jwk", "x5c", "crit")
_EC_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_MALFORMED = (ValueError, TypeError, OverflowError, RecursionError, KeyError, AttributeError)


def _fits(alg: str, jwk: dict[str, Any]) -> bool:
    """True when a token signed with ``alg`` may be verified with this JWK (type, curve, declared alg)."""
    if jwk.get("alg") not in (None, alg):
        return False
    kty = jwk.get("kty")
    if alg.startswith(("RS", "PS")):
        return kty == "RSA"
    if alg in _EC_CURVES:
        return kty == "EC" and jwk.get("crv") == _EC_CURVES[alg]
    return alg == "EdDSA" and kty == "OKP"


def _header(token: str) -> dict[str, Any]:
    """The JOSE header, parsed alone: jwt.decode parses and checks the whole token once more, and the
    header is all we need to pick the key (jwt.get_unverified_header would check every segment twice)."""
    segment = token.partition(".")[0]
    try:
        if not _BASE64URL.fullmatch(segment):
            raise ValueError("not base64url")
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (*_MALFORMED, binascii.Error):
        raise errors.InvalidToken("the access token is not a well-formed JWT") from None
    if not isinstance(header, dict):
        raise errors.InvalidToken("the access token's header is not a JSON object")
    return header


def claim(claims: dict[str, Any], path: str) -> Any:
    """The value at ``path``: the claim of that exact name (URL-named claims hold dots), else a dotted path
    through nested objects (``realm_access.roles``); None when absent."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _strings(value: Any) -> list[str]:
    """A claim read as a list of strings: one string, or the strings of a list (other members ignored)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def scalar(value: Any) -> str | None:
    """A row-policy value as text: strings, integers and booleans (``true``/``false``); anything else None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    return None


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """``scope`` (space-separated, RFC 9068) or ``scp`` (a list, or space-separated as Entra ID sends it)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str))
    return frozenset(found)


def principal_from_claims(settings: OidcSettings, claims: dict[str, Any]) -> Principal:
    """The principal of verified claims, as ``auth.oidc`` maps them; 401/403 when they do not suffice."""
    user = claims.get(settings.user_claim)
    if isinstance(user, int) and not isinstance(user, bool):
        user = str(user)
    if not isinstance(user, str) or not user:
        raise errors.InvalidToken(f"the access token has no usable {settings.user_claim!r} claim (the user id)")
    scopes = scopes_of(claims)
    missing = [scope for scope in settings.required_scopes if scope not in scopes]
    if missing:
        raise errors.InsufficientScope(f"the access token lacks the required scope(s) {' '.join(missing)}",
                                       required_scopes=settings.required_scopes)
    role = Role.CLIENT
    if settings.role_claim:
        for value in _strings(claim(claims, settings.role_claim)):
            mapped = settings.role_map.get(value)
            if mapped is not None and Role(mapped).rank > role.rank:
                role = Role(mapped)
    databases = set(settings.databases)
    if settings.databases_claim:
        databases.update(_strings(claim(claims, settings.databases_claim)))
    pg_role = settings.pg_role
    if settings.pg_role_claim:
        carried = set(_strings(claim(claims, settings.pg_role_claim)))
        mapped_roles = [role_name for value, role_name in settings.pg_role_map.items() if value in carried]
        pg_role = mapped_roles[0] if mapped_roles else settings.pg_role
    policy = {name: text for name, path in settings.policy_claims.items()
              if (text := scalar(claim(claims, path))) is not None}
    email = claims.get(settings.email_claim)
    client = claims.get("azp") or claims.get("client_id")
    return Principal(
        name=email if settings.log_email and isinstance(email, str) and email else user,
        role=role, databases=frozenset(databases), pg_role=pg_role, user=user,
        client=client if isinstance(client, str) else None, claims=tuple(sorted(policy.items())), scopes=scopes)


@dataclass(slots=True)
class _Key:
    jwk: dict[str, Any]
    key: Any  # the cryptography public key PyJWT built from the JWK


@dataclass(slots=True)
class _Valid:
    principal: Principal
    expires: float  # wall clock, never past the token's exp


class OidcValidator:
    """Bearer access token -> :class:`Principal`, or ``invalid_token``; one per gateway, its caches in memory."""

    def __init__(self, settings: OidcSettings, http: httpx2.AsyncClient | None = None) -> None:
        self.settings = settings
        self._http = http
        self._keys: dict[str, _Key] = {}
        self._jwks_url = settings.jwks_url
        self._fetched_at: float | None = None  # monotonic, last successful JWKS fetch
        self._attempted_at: float | None = None  # monotonic, last fetch started
        self._last_fetch_failed = False
        self._inflight: asyncio.Future[None] | None = None
        self._valid: OrderedDict[bytes, _Valid] = OrderedDict()
        self.jwks_fetches = 0
        self._metadata: dict[str, Any] | None = None
        self._metadata_at: float | None = None  # monotonic, last successful discovery
        self._metadata_attempted_at: float | None = None  # monotonic, last discovery started

    # --- the request path ---------------------------------------------------------------------------
    async def authenticate(self, token: str) -> Principal:
        if len(token) > self.settings.max_token_bytes:
            raise errors.InvalidToken(f"the bearer token is larger than {self.settings.max_token_bytes} bytes "
                                      "(auth.oidc.max_token_bytes)")
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        hit = self._valid.get(digest)
        if hit is not None and time.time() < hit.expires:
            return hit.principal
        claims = await (self._verify_jwt(token) if token.count(".") == 2 else self._introspect(token))
        principal = principal_from_claims(self.settings, claims)
        exp = claims.get("exp")
        expires = time.time() + self.settings.token_cache_ttl_s
        if isinstance(exp, int | float) and not isinstance(exp, bool) and exp < expires:
            expires = float(exp)  # compared first: float() of a huge integer would overflow
        if self.settings.token_cache_ttl_s > 0:
            self._valid[digest] = _Valid(principal, expires)
            while len(self._valid) > self.settings.token_cache_max:
                self._valid.popitem(last=False)
        return principal

    def known(self, token: str) -> bool:
        """True when this token was validated recently and has not expired, or is a JWT signed (so it says)
        with a key this replica holds: checking it costs one signature and no network, so an address that
        spent its budget of refused requests (a browser's favicon requests, a shared NAT) can still sign in
        with a fresh token. A forged one is refused by the check and counted against the address."""
        if len(token) > self.settings.max_token_bytes:
            return False
        hit = self._valid.get(hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest())
        if hit is not None:
            return time.time() < hit.expires
        if token.count(".") != 2:
            return False  # opaque: introspection is a network round trip
        try:
            header = _header(token)
        except errors.InvalidToken:
            return False
        alg, kid = header.get("alg"), header.get("kid")
        return (isinstance(alg, str) and alg in self.settings.algorithms and isinstance(kid, str)
                and kid in self._keys and not any(name in header for name in _REFUSED_HEADERS))

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # --- JWT ------------------------------------------------------------------------------------------
    async def _verify_jwt(self, token: str) -> dict[str, Any]:
        settings = self.settings
        header = _header(token)
        refused = [name for name in _REFUSED_HEADERS if name in header]
        if refused:
            raise errors.InvalidToken(f"the access token's header carries {', '.join(refused)}: keys come only "
                                      "from the issuer's JWKS")
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in settings.algorithms:
            raise errors.InvalidToken(f"the access token's algorithm {alg!r} is not accepted "
                                      f"(auth.oidc.algorithms: {', '.join(settings.algorithms)})")
        if not isinstance(kid, str) or not kid:
            raise errors.InvalidToken("the access token's header names no key (kid)")
        key = await self._key(kid)
        if not _fits(alg, key.jwk):
            raise errors.InvalidToken(f"the access token's algorithm {alg} does not fit key {kid!r}")
        try:
            claims = jwt.decode(token, key.key, algorithms=[alg], audience=settings.audiences,
                                issuer=settings.issuer, leeway=settings.leeway_s,
                                options={"require": ["exp", "iat", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            raise errors.InvalidToken("the access token expired") from None
        except jwt.ImmatureSignatureError:
            raise errors.InvalidToken("the access token is not valid yet (nbf or iat in the future)") from None
        except jwt.InvalidAudienceError:
            raise errors.InvalidToken("the access token was issued for another audience") from None
        except jwt.InvalidIssuerError:
            raise errors.InvalidToken("the access token was issued by another issuer") from None
        except jwt.MissingRequiredClaimError as exc:
            raise errors.InvalidToken(f"the access token lacks the {exc.claim!r} claim") from None
        except jwt.InvalidSignatureError:
            raise errors.InvalidToken("the access token's signature does not verify") from None
        except (jwt.PyJWTError, *_MALFORMED):
            raise errors.InvalidToken("the access token is malformed") from None
        if not isinstance(claims, dict):
            raise errors.InvalidToken("the access token's claims are not a JSON object")
        return claims

    async def _key(self, kid: str) -> _Key:
        now = time.monotonic()
        stale = self._fetched_at is None or now - self._fetched_at >= self.settings.jwks_cache_ttl_s
        if (stale or kid not in self._keys) and self._may_fetch(now):
            await self._refresh()
        key = self._keys.get(kid)
        if key is not None:
            return key
        if self._last_fetch_failed:
            raise errors.IdentityProviderUnavailable(
                "the authorization server's keys (JWKS) could not be fetched to check this token")
        raise errors.InvalidToken(f"the access token's key {kid!r} is not among the issuer's published keys")

    def _may_fetch(self, now: float) -> bool:
        return self._attempted_at is None or now - self._attempted_at >= self.settings.jwks_refresh_interval_s

    async def _refresh(self) -> None:
        """Fetch the JWKS once for every caller waiting now; a failure keeps the keys cached so far."""
        if self._inflight is None or self._inflight.done():
            self._attempted_at = time.monotonic()
            self._inflight = asyncio.ensure_future(self._fetch())
        await asyncio.shield(self._inflight)

    async def _fetch(self) -> None:
        self.jwks_fetches += 1
        try:
            url = self._jwks_url or await self._discover()
            self._jwks_url = url
            answer = await self._client().get(url)
            answer.raise_for_status()
            keys = self._parse_jwks(answer.json())
        except (httpx2.HTTPError, *_MALFORMED) as exc:
            self._last_fetch_failed = True
            log.warning("oidc_jwks_fetch_failed", error=repr(exc), cached_keys=sorted(self._keys))
            return
        self._keys, self._fetched_at, self._last_fetch_failed = keys, time.monotonic(), False
        log.info("oidc_jwks_fetched", kids=sorted(keys))

    def _parse_jwks(self, document: Any) -> dict[str, _Key]:
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise ValueError("the JWKS document has no keys list")
        keys: dict[str, _Key] = {}
        for jwk in document["keys"]:
            # Signing keys with a kid only: never a symmetric key, never an encryption key.
            if (not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig" or not isinstance(jwk.get("kid"), str)
                    or jwk.get("kty") not in {"RSA", "EC", "OKP"}):
                continue
            try:
                keys[jwk["kid"]] = _Key(jwk, jwt.PyJWK(jwk).key)
            except (jwt.PyJWTError, *_MALFORMED) as exc:
                log.warning("oidc_jwk_skipped", kid=jwk.get("kid"), error=repr(exc))
        return keys

    async def metadata(self) -> dict[str, Any]:
        """The authorization server's metadata (endpoints a browser signs in with), reused for
        ``jwks_cache_ttl_s``; a failed refetch keeps the last document. Fetched at most once per
        ``jwks_refresh_interval_s`` (whoever asks, and the console's public config asks, cannot make the
        gateway hammer the authorization server); 503 ``idp_unavailable`` while none is known."""
        now = time.monotonic()
        fresh = self._metadata_at is not None and now - self._metadata_at < self.settings.jwks_cache_ttl_s
        may_fetch = (self._metadata_attempted_at is None
                     or now - self._metadata_attempted_at >= self.settings.jwks_refresh_interval_s)
        if not fresh and may_fetch:
            self._metadata_attempted_at = now
            try:
                self._metadata, self._metadata_at = await self._discover_metadata(), time.monotonic()
            except httpx2.HTTPError as exc:
                log.warning("oidc_discovery_failed", error=repr(exc), cached=self._metadata is not None)
        if self._metadata is None:
            raise errors.IdentityProviderUnavailable("the authorization server's metadata (discovery) could not "
                                                     "be fetched")
        return self._metadata

    async def _discover(self) -> str:
        """``jwks_uri`` from the issuer's metadata."""
        jwks_uri = (await self._discover_metadata()).get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise ValueError("the authorization server's metadata has no jwks_uri")
        return jwks_uri

    async def _discover_metadata(self) -> dict[str, Any]:
        """The issuer's OIDC discovery document, else its RFC 8414 metadata; it must name this issuer."""
        issuer = self.settings.issuer.rstrip("/")
        parts = urlsplit(issuer)
        candidates = [f"{issuer}/.well-known/openid-configuration",  # OIDC Discovery: appended to the issuer
                      # RFC 8414: inserted between the host and the issuer's path
                      f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path}"]
        last: Exception | None = None
        for url in candidates:
            try:
                answer = await self._client().get(url)
                answer.raise_for_status()
                metadata = answer.json()
                if not isinstance(metadata, dict) or metadata.get("issuer") != self.settings.issuer:
                    raise ValueError(f"{url} names another issuer: {metadata.get('issuer')!r}"
                                     if isinstance(metadata, dict) else f"{url} is not a JSON object")
                return metadata
            except (httpx2.HTTPError, *_MALFORMED) as exc:
                last = exc
        raise httpx2.HTTPError(f"discovery failed for issuer {self.settings.issuer}: {last!r}")

    def _client(self) -> httpx2.AsyncClient:
        if self._http is None:
            # No redirects: the keys come from the configured or discovered URL, not wherever it points.
            self._http = httpx2.AsyncClient(timeout=self.settings.http_timeout_s, follow_redirects=False)
        return self._http

    # --- opaque tokens ----------------------------------------------------------------------------------
    async def _introspect(self, token: str) -> dict[str, Any]:
        settings = self.settings
        config = settings.introspection
        if config is None:
            raise errors.InvalidToken("the bearer token is neither a gateway API key nor a JWT access token")
        secret = config.secret.get_secret_value() if config.secret else ""
        try:
            answer = await self._client().post(config.url, data={"token": token, "token_type_hint": "access_token"},
                                               auth=(config.client_id, secret))
            answer.raise_for_status()
            record = answer.json()
        except (httpx2.HTTPError, *_MALFORMED) as exc:
            log.warning("oidc_introspection_failed", error=repr(exc))
            raise errors.IdentityProviderUnavailable("the authorization server's introspection endpoint did not "
                                                     "answer") from None
        if not isinstance(record, dict) or record.get("active") is not True:
            raise errors.InvalidToken("the access token is not active (introspection)")
        now = time.time()
        exp, nbf = record.get("exp"), record.get("nbf")
        if isinstance(exp, int | float) and exp < now - settings.leeway_s:
            raise errors.InvalidToken("the access token expired")
        if isinstance(nbf, int | float) and nbf > now + settings.leeway_s:
            raise errors.InvalidToken("the access token is not valid yet (nbf in the future)")
        if record.get("iss", settings.issuer) != settings.issuer:
            raise errors.InvalidToken("the access token was issued by another issuer")
        if not set(_strings(record.get("aud"))) & set(settings.audiences):
            raise errors.InvalidToken("the access token was issued for another audience")
        return record
