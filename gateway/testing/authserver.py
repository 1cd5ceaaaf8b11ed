"""A test OAuth 2.1 / OpenID Connect authorization server on loopback, for tests and benchmarks.

It issues real tokens over real HTTP, so the gateway's resource server (gateway.auth.oidc), the MCP SDK's
OAuth client (``mcp.client.auth.OAuthClientProvider``) and a browser console all run for real against it:

- metadata: ``/.well-known/openid-configuration`` and ``/.well-known/oauth-authorization-server`` (RFC 8414);
- ``/jwks``: the published public keys (RSA 2048 and EC P-256, each with a ``kid``);
- the authorization-code flow with PKCE S256, dynamic client registration (RFC 7591) and refresh tokens:
  the MCP SDK's authorization-server handlers (``mcp.server.auth.routes``) with the provider below, which
  issues JWT access tokens (or opaque ones, ``token_format="opaque"``); CORS on the token endpoint, so a
  browser console can post its code there;
- ``/revoke``: RFC 7009 revocation of refresh and access tokens, by public clients too;
- ``/introspect``: RFC 7662 introspection for opaque and issued tokens (client ``gateway``/``gateway-secret``).

``/authorize`` approves at once for the user set with :meth:`AuthServer.login_as` (``alice`` by default) and
redirects to the client's registered ``redirect_uri`` with ``code`` and ``state``: a client follows the
redirect with plain HTTP, no browser. With ``login_as(None)`` it redirects with ``error=access_denied``.

Test helpers: :meth:`mint` signs any token, well-formed or malicious (``alg: none``, HS256 keyed with the
public key, foreign headers, missing or odd claims); :meth:`mint_opaque` makes an opaque token for
introspection; :meth:`rotate`, :meth:`retire` (alias :meth:`revoke_key`) change the published keys;
``hits`` counts requests per path (``jwks_fetches``); ``jwks_down`` makes ``/jwks`` answer 503.

>>> with AuthServer() as server:  # doctest: +SKIP
...     token = server.mint("alice")                      # a valid access token for the default audience
...     bad = server.mint("alice", alg="none")            # unsigned
...     new_kid = server.rotate()                         # new current key, the old one still published
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import cors_middleware, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.testing import loopback

KeyKind = Literal["RSA", "EC"]

DEFAULT_AUDIENCE = "nl2sql-gateway"
DEFAULT_SCOPES = ("openid", "profile", "email", "offline_access", "nl2sql:schema", "nl2sql:query", "nl2sql:ask",
                  "nl2sql:feedback")
INTROSPECTION_CLIENT = ("gateway", "gateway-secret")

# The test users and their claims. alice and bob are tenants of the same deployment (row policies on
# tenant_id); dana is an administrator; carol has an account but no role and no databases in her token.
DEFAULT_USERS: dict[str, dict[str, Any]] = {
    "alice": {"email": "alice@example.com", "name": "Alice", "tenant_id": 1, "role": "analyst",
              "databases": ["demo"], "org": {"region": "eu"}},
    "bob": {"email": "bob@example.com", "name": "Bob", "tenant_id": 2, "role": "analyst",
            "databases": ["demo"], "org": {"region": "us"}},
    "carol": {"email": "carol@example.com", "name": "Carol"},
    "dana": {"email": "dana@example.com", "name": "Dana", "tenant_id": 1, "role": "platform-admin",
             "databases": ["*"]},
}

_UNSET: Any = object()


@dataclass(frozen=True)
class SigningKey:
    kid: str
    kind: KeyKind
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)

    @property
    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            jwk = dict(RSAAlgorithm.to_jwk(public, as_dict=True))
            jwk["alg"] = "RS256"
        else:
            jwk = dict(ECAlgorithm.to_jwk(public, as_dict=True))
            jwk["alg"] = "ES256"
        jwk.update(kid=self.kid, use="sig")
        return jwk


def new_key(kind: KeyKind, kid: str | None = None) -> SigningKey:
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    if kind == "RSA":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        private = ec.generate_private_key(ec.SECP256R1())
    return SigningKey(kid or f"{kind.lower()}-{secrets.token_hex(4)}", kind, private)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class _Provider:
    """The MCP SDK's ``OAuthAuthorizationServerProvider`` for the test server: auto-approving, in memory."""

    def __init__(self, server: AuthServer) -> None:
        self.server = server

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.server.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.server.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        user = self.server.logged_in
        if user is None:
            return construct_redirect_uri(str(params.redirect_uri), error="access_denied",
                                          error_description="no user is logged in", state=params.state)
        assert client.client_id is not None
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32), scopes=params.scopes or (client.scope or "").split(),
            expires_at=time.time() + 300, client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject=user)
        self.server.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        code = self.server.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        # Single use: a second exchange of the same code finds nothing (load_authorization_code -> None).
        if self.server.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code was already used")
        assert authorization_code.subject is not None
        return self._tokens(client, authorization_code.subject, authorization_code.scopes,
                            authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        token = self.server.refresh_tokens.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        if self.server.refresh_tokens.pop(refresh_token.token, None) is None:  # rotated: single use
            raise TokenError("invalid_grant", "refresh token was already used")
        assert refresh_token.subject is not None
        return self._tokens(client, refresh_token.subject, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        record = self.server.introspect(token)
        if not record.get("active"):
            return None
        return AccessToken(token=token, client_id=str(record.get("client_id", "")),
                           scopes=str(record.get("scope", "")).split(), expires_at=record.get("exp"),
                           subject=record.get("sub"))

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.server.revoked.add(token.token)
        self.server.refresh_tokens.pop(token.token, None)

    def _tokens(self, client: OAuthClientInformationFull, user: str, scopes: list[str],
                resource: str | None) -> OAuthToken:
        server = self.server
        assert client.client_id is not None
        scope = " ".join(scopes)
        audience = resource or server.audience
        if server.token_format == "opaque":
            access = server.mint_opaque(user, scope=scope, audience=audience, client_id=client.client_id)
        else:
            access = server.mint(user, scope=scope, audience=audience, client_id=client.client_id)
        refresh = RefreshToken(token=secrets.token_urlsafe(32), client_id=client.client_id, scopes=scopes,
                               expires_at=int(time.time()) + 86_400, resource=resource, subject=user)
        server.refresh_tokens[refresh.token] = refresh
        server.issued.append(access)
        return OAuthToken(access_token=access, expires_in=server.access_ttl_s, scope=scope,
                          refresh_token=refresh.token)


class AuthServer:
    """Start with :meth:`start` (or as a context manager); ``issuer`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, *, audience: str = DEFAULT_AUDIENCE, scopes: tuple[str, ...] = DEFAULT_SCOPES,
                 access_ttl_s: int = 300, token_format: Literal["jwt", "opaque"] = "jwt",
                 users: dict[str, dict[str, Any]] | None = None) -> None:
        self.audience = audience
        self.scopes = scopes
        self.access_ttl_s = access_ttl_s
        self.token_format = token_format
        self._default_users = users if users is not None else DEFAULT_USERS
        self._initial_keys = [new_key("RSA", "rsa-1"), new_key("EC", "ec-1")]
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.reset()

    # --- state ------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the initial keys, users and login; forget clients, codes, tokens and counters."""
        with self._lock:
            self.keys: dict[str, SigningKey] = {key.kid: key for key in self._initial_keys}
            self.published: list[str] = [key.kid for key in self._initial_keys]
            self.current: dict[KeyKind, str] = {"RSA": "rsa-1", "EC": "ec-1"}
            self.users: dict[str, dict[str, Any]] = copy.deepcopy(self._default_users)
            self.logged_in: str | None = "alice"
            self.clients: dict[str, OAuthClientInformationFull] = {}
            self.codes: dict[str, AuthorizationCode] = {}
            self.refresh_tokens: dict[str, RefreshToken] = {}
            self.opaque: dict[str, dict[str, Any]] = {}
            self.revoked: set[str] = set()
            self.issued: list[str] = []  # access tokens handed out by /token, oldest first
            self.hits: Counter[str] = Counter()  # requests per path
            self.jwks_down = False

    def login_as(self, user: str | None) -> None:
        """Whom the next ``/authorize`` approves for (None: nobody is logged in, the request is denied)."""
        self.logged_in = user

    @property
    def jwks_fetches(self) -> int:
        return self.hits["/jwks"]

    def rotate(self, kind: KeyKind = "RSA") -> str:
        """A new current key of ``kind``, published beside the old ones (until :meth:`retire`); its kid."""
        key = new_key(kind)
        with self._lock:
            self.keys[key.kid] = key
            self.published.append(key.kid)
            self.current[kind] = key.kid
        return key.kid

    def retire(self, kid: str) -> None:
        """Stop publishing ``kid``. :meth:`mint` can still sign with it (a stolen or revoked key)."""
        with self._lock:
            self.published = [k for k in self.published if k != kid]

    revoke_key = retire

    def add_client(self, client_id: str, redirect_uris: list[str], *, secret: str | None = None,
                   scope: str | None = None) -> OAuthClientInformationFull:
        """Register a client without RFC 7591 (a console with a fixed client id); public without ``secret``."""
        client = OAuthClientInformationFull(
            client_id=client_id, client_secret=secret, redirect_uris=[AnyUrl(u) for u in redirect_uris],
            token_endpoint_auth_method="client_secret_post" if secret else "none",
            grant_types=["authorization_code", "refresh_token"], scope=scope or " ".join(self.scopes))
        self.clients[client_id] = client
        return client

    # --- tokens -----------------------------------------------------------------------------------
    def claims_for(self, sub: str) -> dict[str, Any]:
        return copy.deepcopy(self.users.get(sub, {}))

    def mint(self, sub: str | None = "alice", claims: dict[str, Any] | None = None, *, kid: str | None = None,
             alg: str = "RS256", exp: Any = _UNSET, nbf: Any = _UNSET, iat: Any = _UNSET, ttl_s: int | None = None,
             audience: Any = _UNSET, issuer: Any = _UNSET, scope: str | None = "nl2sql:query nl2sql:ask",
             client_id: str | None = "test-client", headers: dict[str, Any] | None = None,
             omit: tuple[str, ...] = (), hmac_secret: bytes | None = None) -> str:
        """A signed JWT access token, by default valid for the gateway: the user's claims (``users``),
        overridden by ``claims``; ``exp``/``nbf``/``iat``/``audience``/``issuer`` replace the defaults
        (any JSON value, for malformed tokens); ``omit`` drops claims.

        ``kid``: a published or retired key signs (and its kid is in the header); an unknown kid, or one of
        a key of another type than ``alg`` needs, is put in the header of a token signed by the current key.
        ``alg``: RS*/PS* sign with an RSA key, ES256 with an EC key, ``none`` leaves the token unsigned,
        HS* signs with ``hmac_secret`` (default: the current RSA public key's PEM, the key-confusion attack).
        ``headers`` are added to the JOSE header (``jku``, ``x5u``, ``jwk``, ``crit``, ...).
        """
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.issuer if issuer is _UNSET else issuer,
            "aud": self.audience if audience is _UNSET else audience,
            "iat": now if iat is _UNSET else iat,
            "nbf": now if nbf is _UNSET else nbf,
            "exp": now + (ttl_s if ttl_s is not None else self.access_ttl_s) if exp is _UNSET else exp,
            "jti": secrets.token_hex(8),
        }
        if sub is not None:
            payload["sub"] = sub
            payload.update(self.claims_for(sub))
        if scope is not None:
            payload["scope"] = scope
        if client_id is not None:
            payload["client_id"] = payload["azp"] = client_id
        payload.update(claims or {})
        for name in omit:
            payload.pop(name, None)
        header: dict[str, Any] = dict(headers or {})
        if alg == "none":
            header = {"alg": "none", "typ": "JWT", **({"kid": kid} if kid else {}), **header}
            return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}."
        if alg.startswith("HS"):
            secret = hmac_secret if hmac_secret is not None else self.keys[self.current["RSA"]].public_pem
            header = {"alg": alg, "typ": "JWT", "kid": kid or self.current["RSA"], **header}
            signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"
            digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
            return f"{signing_input}.{_b64(hmac.new(secret, signing_input.encode(), digest).digest())}"
        kind: KeyKind = "EC" if alg.startswith("ES") else "RSA"
        key = self.keys.get(kid) if kid else None
        signer = key if key is not None and key.kind == kind else self.keys[self.current[kind]]
        header = {"kid": kid or signer.kid, "typ": "at+jwt", **header}
        # Signed as raw JSON (PyJWS), not through jwt.encode, which refuses odd claims (a list as iss ...).
        return jwt.api_jws.PyJWS().encode(json.dumps(payload).encode(), signer.private, algorithm=alg,
                                          headers=header)

    def mint_opaque(self, sub: str = "alice", claims: dict[str, Any] | None = None, *,
                    scope: str = "nl2sql:query nl2sql:ask", audience: Any = _UNSET, active: bool = True,
                    exp: int | None = None, client_id: str = "test-client") -> str:
        """An opaque (non-JWT) access token that only ``/introspect`` can explain."""
        token = "opq_" + secrets.token_urlsafe(32)
        record: dict[str, Any] = {
            "active": active, "sub": sub, "scope": scope, "client_id": client_id, "iss": self.issuer,
            "aud": self.audience if audience is _UNSET else audience, "token_type": "Bearer",
            "iat": int(time.time()), "exp": exp if exp is not None else int(time.time()) + self.access_ttl_s,
            **self.claims_for(sub), **(claims or {}),
        }
        self.opaque[token] = record
        return token

    def introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662: the token's record, or ``{"active": false}`` (unknown, revoked, expired, bad)."""
        inactive: dict[str, Any] = {"active": False}
        if token in self.revoked:
            return inactive
        record = self.opaque.get(token)
        if record is None:
            try:
                kid = jwt.get_unverified_header(token).get("kid")
                key = self.keys[kid] if kid in self.published else None
                if key is None:
                    return inactive
                record = {"active": True, **jwt.decode(token, key.private.public_key(),
                                                        algorithms=["RS256", "ES256", "PS256"],
                                                        options={"verify_aud": False})}
            except (jwt.PyJWTError, KeyError, TypeError):
                return inactive
        if not record.get("active") or int(record.get("exp", 0)) < time.time():
            return inactive
        return dict(record)

    # --- HTTP -------------------------------------------------------------------------------------
    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def introspection_url(self) -> str:
        return f"{self.issuer}/introspect"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "revocation_endpoint": f"{self.issuer}/revoke",
            "introspection_endpoint": self.introspection_url,
            "jwks_uri": self.jwks_url,
            "scopes_supported": list(self.scopes),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        }

    async def _metadata(self, request: Request) -> Response:
        return JSONResponse(self.metadata())

    async def _jwks(self, request: Request) -> Response:
        if self.jwks_down:
            return JSONResponse({"error": "temporarily_unavailable"}, 503)
        with self._lock:
            keys = [self.keys[kid].jwk for kid in self.published]
        return JSONResponse({"keys": keys})

    async def _introspect(self, request: Request) -> Response:
        form = await request.form()
        client_id, secret = form.get("client_id"), form.get("client_secret")
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            except ValueError:
                client_id = secret = None
        if (client_id, secret) != INTROSPECTION_CLIENT:
            return JSONResponse({"error": "invalid_client"}, 401, headers={"WWW-Authenticate": "Basic"})
        return JSONResponse(self.introspect(str(form.get("token", ""))))

    async def _revoke(self, request: Request) -> Response:
        """RFC 7009 revocation for public clients too (``client_id`` alone, as a browser sends it): the MCP
        SDK's handler requires a ``client_secret`` field even from a client registered without one."""
        form = await request.form()
        client = self.clients.get(str(form.get("client_id", "")))
        secret = form.get("client_secret")
        if client is None or (client.client_secret is not None and not (
                isinstance(secret, str) and hmac.compare_digest(secret, client.client_secret))):
            return JSONResponse({"error": "invalid_client"}, 401)
        token = str(form.get("token", ""))
        refresh = self.refresh_tokens.get(token)
        if refresh is not None and refresh.client_id == client.client_id:
            self.refresh_tokens.pop(token, None)
        elif self.introspect(token).get("client_id") == client.client_id:
            self.revoked.add(token)
        return Response(status_code=200)  # unknown tokens too (RFC 7009 section 2.2)

    def _app(self) -> ASGIApp:
        sdk_routes = create_auth_routes(
            _Provider(self), AnyHttpUrl(self.issuer),  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=list(self.scopes), default_scopes=list(self.scopes)),
            revocation_options=RevocationOptions(enabled=True))
        own = [
            # Ours first: the same path as the SDK's metadata route, with jwks_uri and introspection added.
            Route("/.well-known/oauth-authorization-server", cors_middleware(self._metadata, ["GET", "OPTIONS"]),
                  methods=["GET", "OPTIONS"]),
            Route("/.well-known/openid-configuration", cors_middleware(self._metadata, ["GET", "OPTIONS"]),
                  methods=["GET", "OPTIONS"]),
            Route("/jwks", cors_middleware(self._jwks, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"]),
            Route("/introspect", self._introspect, methods=["POST"]),
            Route("/revoke", cors_middleware(self._revoke, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
        ]
        app = Starlette(routes=own + [r for r in sdk_routes if r.path not in {x.path for x in own}])
        async def counted(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                self.hits[scope["path"]] += 1
            await app(scope, receive, send)

        return counted

    def start(self) -> AuthServer:
        self._server, self._thread, self.port = loopback.serve(self._app(), "test authorization server", self.port)
        return self

    def stop(self) -> None:
        loopback.stop(self._server, self._thread)

    def __enter__(self) -> AuthServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def authorization_url(server: AuthServer, client_id: str, redirect_uri: str, code_challenge: str,
                      state: str = "state", scope: str | None = None, resource: str | None = None) -> str:
    """The ``/authorize`` URL of a PKCE S256 request (for tests that drive the flow by hand)."""
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
              "code_challenge": code_challenge, "code_challenge_method": "S256", "state": state}
    if scope:
        params["scope"] = scope
    if resource:
        params["resource"] = resource
    return f"{server.issuer}/authorize?{urlencode(params)}"


def pkce_pair() -> tuple[str, str]:
    """``(verifier, S256 challenge)`` for a PKCE request."""
    verifier = secrets.token_urlsafe(48)
    challenge = _b64(hashlib.sha256(verifier.encode("ascii")).digest())
    return verifier, challenge
