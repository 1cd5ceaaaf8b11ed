"""Remote MCP connectors: OAuth 2.1 at /mcp, as the MCP spec's authorization section says.

A real gateway behind uvicorn on loopback, a real test authorization server (gateway.testing.authserver) and
the MCP SDK's own OAuth client (``OAuthClientProvider``): discovery from the 401 challenge, dynamic client
registration, the PKCE code flow (the authorization server approves at once for ``login_as``), the token
for the gateway's resource URL, step-up on 403 ``insufficient_scope``, re-authorization and refresh. Who the
end user is reaches Postgres: a table with row-level security on ``nl2sql.tenant_id`` shows each user their
tenant's rows only (tests/rowpolicy's two-tenant database).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl

from gateway.auth.resource import challenge, metadata_url
from gateway.settings import (
    AuthSettings,
    BackpressureSettings,
    DatabaseSettings,
    Limits,
    OidcSettings,
)
from gateway.testing.authserver import DEFAULT_SCOPES, AuthServer
from gateway.testing.scripted_llm import ScriptedLLM
from tests.mcp_server.conftest import (
    Served,
    http_client,
    mcp_settings,
    served,
    store_dsn,  # noqa: F401 - a store database, per module
)
from tests.rowpolicy.conftest import Tenants, tenants  # noqa: F401 - two tenants, RLS on nl2sql.tenant_id

SCOPES = (*DEFAULT_SCOPES, "nl2sql:schema", "nl2sql:feedback")
REDIRECT = "http://127.0.0.1:9/callback"  # never contacted: the redirect handler reads the code off the Location
CUSTOMERS = {"database": "tenants", "sql": "SELECT name FROM customers ORDER BY customer_id"}
TENANT_1 = [["alice"], ["bob"], ["carol"]]
TENANT_2 = [["TENANT2 dave"], ["TENANT2 erin"], ["TENANT2 frank"]]
RUN = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
       "params": {"name": "run_sql", "arguments": {"database": "demo", "sql": "SELECT 1"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture(scope="module")
def as_server() -> Iterator[AuthServer]:
    # The default test server plus the gateway's schema and feedback scopes (registration refuses others).
    with AuthServer(scopes=SCOPES) as server:
        yield server


@pytest.fixture
def idp2(as_server: AuthServer) -> Iterator[AuthServer]:
    as_server.reset()
    yield as_server
    as_server.reset()
    as_server.access_ttl_s = 300


@pytest.fixture(scope="module")
async def ogw(demo_dsn: str, store_dsn: str, llm_server: ScriptedLLM, tenants: Tenants,  # noqa: F811
              as_server: AuthServer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    settings = mcp_settings(demo_dsn, store_dsn, tmp_path_factory.mktemp("mcp-oauth"), llm_server.base_url, auth=True)
    settings.databases["tenants"] = DatabaseSettings(dsn=tenants.rls_dsn, limits=Limits(statement_timeout_ms=3000))
    # resource_url unset: derived from the request (scheme, Host, /mcp). Tokens for it are accepted, as are
    # tokens for the authorization server's default audience (what mint() issues unless told otherwise).
    oidc = OidcSettings(issuer=as_server.issuer, audience=[resource, as_server.audience], role_claim="role",
                        role_map={"analyst": "client", "platform-admin": "admin"}, databases_claim="databases",
                        databases=["tenants"], policy_claims={"tenant_id": "tenant_id"})
    settings.auth = AuthSettings(enabled=True, cache_ttl_s=0.0, oidc=oidc)
    settings.backpressure = BackpressureSettings(unauthenticated_per_s=1000.0, unauthenticated_burst=100_000)
    async with served(settings, sock) as (base, state):
        yield Served(base, state)


class Memory:
    """In-memory ``TokenStorage`` for the SDK's OAuth client."""

    def __init__(self, tokens: OAuthToken | None = None, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens, self.client = tokens, client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def provider(url: str, storage: Memory) -> OAuthClientProvider:
    """The SDK's OAuth client; the "browser" is httpx following nothing: it reads code and state off the
    authorization server's redirect."""
    redirected: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        async with httpx.AsyncClient() as browser:
            answer = await browser.get(authorization_url)
        assert answer.status_code in {302, 303, 307}, answer.text
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        assert "code" in query, query  # error=access_denied otherwise
        redirected.update(code=query["code"][0], state=query["state"][0])

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirected.pop("code"), state=redirected.pop("state"))

    metadata = OAuthClientMetadata(client_name="nl2sql test connector", redirect_uris=[AnyUrl(REDIRECT)],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="none")
    return OAuthClientProvider(url, metadata, storage, redirect_handler=redirect_handler,
                               callback_handler=callback_handler)


@asynccontextmanager
async def oauth_client(url: str, storage: Memory) -> AsyncIterator[Client]:
    async with create_mcp_http_client(auth=provider(url, storage)) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


def params(header: str) -> dict[str, str]:
    """The auth-params of a ``Bearer`` challenge."""
    assert header.startswith("Bearer "), header
    found: dict[str, str] = {}
    for part in header[len("Bearer "):].split(", "):
        name, _, value = part.partition("=")
        found[name] = value.strip('"')
    return found


def seeded(idp: AuthServer, url: str, *, scope: str, **mint: Any) -> Memory:
    """Storage as a connector would keep it after an earlier session: a registered client and its token."""
    client = idp.add_client("connector", [REDIRECT], scope=" ".join(SCOPES))
    token = idp.mint("alice", scope=scope, audience=url, client_id="connector", **mint)
    return Memory(OAuthToken(access_token=token, token_type="Bearer", scope=scope), client)


# --- discovery ------------------------------------------------------------------------------------------


async def test_no_token_is_401_with_the_metadata_url_and_the_metadata_names_the_issuer(
        ogw: Served, idp2: AuthServer) -> None:
    async with httpx.AsyncClient() as http:
        refused = await http.post(ogw.url, json=RUN, headers=MCP_HEADERS)
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        challenge_ = params(refused.headers["www-authenticate"])
        assert challenge_["resource_metadata"] == f"{ogw.base}/.well-known/oauth-protected-resource/mcp"
        assert "error" not in challenge_  # no token was sent: nothing was invalid (RFC 6750 section 3.1)
        assert set(challenge_["scope"].split()) == {"nl2sql:schema", "nl2sql:query", "nl2sql:ask", "nl2sql:feedback"}

        fetched = await http.get(challenge_["resource_metadata"])  # no key needed
        assert fetched.status_code == 200, fetched.text
        document = ProtectedResourceMetadata.model_validate_json(fetched.content)  # as the SDK's client reads it
        assert str(document.resource) == ogw.url
        assert [str(s).rstrip("/") for s in document.authorization_servers] == [idp2.issuer]
        assert document.bearer_methods_supported == ["header"]
        assert document.scopes_supported is not None and "nl2sql:query" in document.scopes_supported
        # The root form (the SDK's fallback) describes the same resource.
        root = await http.get(f"{ogw.base}/.well-known/oauth-protected-resource")
        assert root.json() == fetched.json()
        # Only GET; and nothing else under the well-known prefix is public.
        assert (await http.post(challenge_["resource_metadata"], json={})).status_code == 405
        assert (await http.get(f"{ogw.base}/.well-known/oauth-protected-resource/v1")).status_code == 401


async def test_a_bad_token_is_401_invalid_token_with_the_challenge(ogw: Served, idp2: AuthServer) -> None:
    tokens = {
        "another audience": idp2.mint("alice", audience="https://other.example/mcp"),
        "expired": idp2.mint("alice", audience=ogw.url, exp=int(time.time()) - 3600),
        "another issuer": idp2.mint("alice", audience=ogw.url, issuer="https://evil.example"),
        "garbage": "not-a-token",
    }
    async with httpx.AsyncClient() as http:
        for why, token in tokens.items():
            refused = await http.post(ogw.url, json=RUN, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
            assert refused.status_code == 401, why
            assert refused.json()["code"] == "invalid_token", why
            challenge_ = params(refused.headers["www-authenticate"])
            assert challenge_["error"] == "invalid_token", why
            assert challenge_["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp"), why
        # The same answer over /v1, which shares the audience.
        refused = await http.post(f"{ogw.base}/v1/sql", json=CUSTOMERS,
                                  headers={"Authorization": f"Bearer {tokens['another audience']}"})
        assert refused.status_code == 401 and "resource_metadata=" in refused.headers["www-authenticate"]


def test_the_resource_url_is_the_configured_one_whatever_the_host_says() -> None:
    configured = OidcSettings(issuer="https://idp.example", audience="gw", resource_url="https://gw.example/mcp")
    found = challenge(configured, "http", 'evil.example"')
    assert found is not None and found.metadata_url == "https://gw.example/.well-known/oauth-protected-resource/mcp"
    derived = OidcSettings(issuer="https://idp.example", audience="gw")
    # A Host that could not be echoed in a URL or a quoted parameter gets no challenge rather than a forged one.
    for host in ('evil.example", error="x', "a b", "", None, "host/path"):
        assert challenge(derived, "https", host) is None, host
    assert challenge(derived, "javascript", "gw.example") is None
    assert metadata_url("https://gw.example/") == "https://gw.example/.well-known/oauth-protected-resource"


# --- the SDK's own OAuth client ----------------------------------------------------------------------


async def test_the_sdk_client_authorizes_and_runs_sql_as_the_end_user(ogw: Served, idp2: AuthServer) -> None:
    storage = Memory()
    async with oauth_client(ogw.url, storage) as client:
        ran = await client.call_tool("run_sql", CUSTOMERS)
        assert not ran.is_error, ran
        assert ran.structured_content["rows"] == TENANT_1  # alice's tenant; RLS read her token's tenant_id
    # The flow the spec describes happened: discovery, registration, one authorization, one code exchange.
    assert idp2.hits["/register"] == 1 and idp2.hits["/authorize"] == 1 and idp2.hits["/token"] == 1
    assert storage.tokens is not None
    issued = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert issued["aud"] == ogw.url and issued["sub"] == "alice"  # RFC 8707: a token for this resource
    assert {"nl2sql:query", "nl2sql:schema"} <= set(issued["scope"].split())

    idp2.login_as("bob")
    async with oauth_client(ogw.url, Memory()) as client:
        ran = await client.call_tool("run_sql", CUSTOMERS)
        assert ran.structured_content["rows"] == TENANT_2, ran


async def test_a_schema_only_token_may_list_but_not_run_sql_on_any_path(ogw: Served, idp2: AuthServer) -> None:
    token = idp2.mint("alice", scope="nl2sql:schema", audience=ogw.url)
    async with http_client(ogw.url, token) as client:
        listed = await client.call_tool("list_databases", {})
        assert not listed.is_error, listed
        assert [d["name"] for d in listed.structured_content["databases"]] == ["demo", "tenants"]
        # tools/list shows what the role allows; calling is what the scope decides (a client may step up).
        assert "run_sql" in {t.name for t in (await client.list_tools()).tools}
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient() as http:
        refused = await http.post(ogw.url, json=RUN, headers=headers)
        assert refused.status_code == 403 and refused.json()["code"] == "insufficient_scope", refused.text
        challenge_ = params(refused.headers["www-authenticate"])
        assert challenge_["error"] == "insufficient_scope" and challenge_["scope"] == "nl2sql:query"
        assert challenge_["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
        # Other spellings of the same call: in a batch, or with the tool's name given twice (the last one
        # counts, for the pre-check as for the SDK). Either way run_sql does not run.
        batch = await http.post(ogw.url, json=[{**RUN, "method": "ping", "id": 0, "params": {}}, RUN],
                                headers=headers)
        assert batch.status_code == 403, batch.text
        twice = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_databases","name":"run_sql",'
                 '"arguments":{"database":"demo","sql":"SELECT 1"}}}')
        answered = await http.post(ogw.url, content=twice, headers=headers)
        assert answered.status_code == 403 and answered.json()["code"] == "insufficient_scope", answered.text
        # The same token against the HTTP API: refused the same way (no way around the connector's scopes).
        v1 = await http.post(f"{ogw.base}/v1/sql", json=CUSTOMERS, headers={"Authorization": f"Bearer {token}"})
        assert v1.status_code == 403 and v1.json()["code"] == "insufficient_scope", v1.text
        assert params(v1.headers["www-authenticate"])["scope"] == "nl2sql:query"
        v1_check = await http.post(f"{ogw.base}/v1/check", json={"sql": "SELECT 1"},
                                   headers={"Authorization": f"Bearer {token}"})
        assert v1_check.status_code == 403, v1_check.text
        for accept in ("application/json", "text/event-stream"):  # refused before a stream starts
            v1_ask = await http.post(f"{ogw.base}/v1/ask", json={"database": "demo", "question": "how many?"},
                                     headers={"Authorization": f"Bearer {token}", "Accept": accept})
            assert v1_ask.status_code == 403 and v1_ask.json()["code"] == "insufficient_scope", v1_ask.text
            assert params(v1_ask.headers["www-authenticate"])["scope"] == "nl2sql:ask"
        listed_v1 = await http.get(f"{ogw.base}/v1/databases", headers={"Authorization": f"Bearer {token}"})
        assert listed_v1.status_code == 200, listed_v1.text
        # Reading resources is a schema operation; schema_scopes also accepts query and ask (writing SQL
        # implies reading the schema), so a feedback-only token is the one refused.
        feedback_only = idp2.mint("alice", scope="nl2sql:feedback", audience=ogw.url)
        read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                "params": {"uri": "nl2sql://databases/demo/schema"}}
        refused = await http.post(ogw.url, json=read, headers={**MCP_HEADERS, "Authorization": f"Bearer {feedback_only}"})
        assert refused.status_code == 403 and params(refused.headers["www-authenticate"])["scope"] == "nl2sql:schema"


async def test_a_token_without_any_scope_of_ours_is_refused_everything_but_whoami(ogw: Served, idp2: AuthServer) -> None:
    token = idp2.mint("alice", scope="openid email", audience=ogw.url)
    async with http_client(ogw.url, token) as client:
        # Past the HTTP layer (list_tools is not a call), the Gateway decides: resources are not listed.
        assert (await client.list_resources()).resources == []
    async with httpx.AsyncClient() as http:
        auth = {"Authorization": f"Bearer {token}"}
        assert (await http.get(f"{ogw.base}/v1/databases", headers=auth)).status_code == 403
        assert (await http.post(f"{ogw.base}/v1/feedback", json={"request_id": "x", "verdict": "correct"},
                                headers=auth)).json()["code"] == "insufficient_scope"
        assert (await http.get(f"{ogw.base}/v1/whoami", headers=auth)).json()["user"] == "alice"


async def test_a_403_insufficient_scope_makes_the_sdk_client_step_up(ogw: Served, idp2: AuthServer) -> None:
    storage = seeded(idp2, ogw.url, scope="nl2sql:schema")
    async with oauth_client(ogw.url, storage) as client:
        listed = await client.call_tool("list_databases", {})
        assert not listed.is_error and idp2.hits["/authorize"] == 0  # the stored token sufficed
        ran = await client.call_tool("run_sql", CUSTOMERS)
        assert not ran.is_error, ran
        assert ran.structured_content["rows"] == TENANT_1
    assert idp2.hits["/authorize"] == 1  # one re-authorization, for the challenged scope
    assert storage.tokens is not None and storage.tokens.scope is not None
    granted = set(storage.tokens.scope.split())
    assert {"nl2sql:schema", "nl2sql:query"} <= granted, granted  # the earlier grant kept (SEP-2350)


async def test_an_expired_token_makes_the_sdk_client_authorize_again(ogw: Served, idp2: AuthServer) -> None:
    storage = seeded(idp2, ogw.url, scope=" ".join(SCOPES), exp=int(time.time()) - 3600)
    stale = storage.tokens.access_token if storage.tokens else None
    async with oauth_client(ogw.url, storage) as client:
        ran = await client.call_tool("run_sql", CUSTOMERS)
        assert ran.structured_content["rows"] == TENANT_1, ran
    assert idp2.hits["/authorize"] == 1
    assert storage.tokens is not None and storage.tokens.access_token != stale


async def test_a_token_the_client_knows_expired_is_refreshed_not_reauthorized(ogw: Served, idp2: AuthServer) -> None:
    # The first token comes with expires_in 0: the SDK's client counts it expired once used (the gateway's
    # 30 s leeway accepted it) and refreshes it before its next request, getting one valid for 300 s.
    idp2.access_ttl_s = 0

    class Storage(Memory):
        async def set_tokens(self, tokens: OAuthToken) -> None:
            await super().set_tokens(tokens)
            idp2.access_ttl_s = 300  # only the first token expires at once

    storage = Storage()
    async with oauth_client(ogw.url, storage) as client:
        for _ in range(2):
            ran = await client.call_tool("run_sql", CUSTOMERS)
            assert ran.structured_content["rows"] == TENANT_1, ran
    assert idp2.hits["/authorize"] == 1, idp2.hits  # never sent back to the user
    assert idp2.hits["/token"] == 2, idp2.hits  # the code exchange, then one refresh grant
    assert storage.tokens is not None and storage.tokens.access_token == idp2.issued[-1] != idp2.issued[0]


async def test_api_keys_are_not_scope_limited(ogw: Served) -> None:
    key = await ogw.key("client", ("demo",))
    async with http_client(ogw.url, key) as client:
        ran = await client.call_tool("run_sql", {"database": "demo", "sql": "SELECT 1 AS one"})
        assert ran.structured_content["rows"] == [[1]], ran


async def test_without_oidc_there_is_no_metadata_and_no_resource_metadata(http_gw: Served) -> None:
    async with httpx.AsyncClient() as http:
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            missing = await http.get(http_gw.base + path)
            assert missing.status_code == 404 and missing.json()["code"] == "not_found", path
        refused = await http.post(http_gw.url, json=RUN, headers=MCP_HEADERS)
        assert refused.status_code == 401
        assert "resource_metadata" not in refused.headers["www-authenticate"]
        assert json.loads(refused.text)["code"] == "unauthorized"
