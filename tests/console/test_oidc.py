"""The console signing in end users with the identity provider: authorization code with PKCE S256 in the
page, against the test authorization server over real HTTP (gateway.testing.authserver), a real gateway and
headless Chromium. Also, without a browser: ``GET /console/config.json``, the page's content security policy
(the token endpoint's origin in ``connect-src``, computed on the server) and the checks on the endpoints an
authorization server's metadata names.

Browser tests share one browser and run in order; every wait is on a condition in the page.
"""

from __future__ import annotations

import doctest
import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

import gateway.auth.signin
from gateway import errors
from gateway.api.console import CSP, csp
from gateway.auth import Authenticator
from gateway.auth.signin import console_sign_in, endpoint
from gateway.settings import AuthSettings, OidcSettings
from gateway.testing.authserver import AuthServer, authorization_url, pkce_pair
from tests.conftest import PgServer
from tests.console.conftest import Console, admin, serve_console
from tests.console.test_browser import console_errors, find, screenshot, visible, wait
from tests.serving import free_port

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
CLIENT_ID = "nl2sql-console"
TENANT_SQL = {"database": "tenants", "sql": "SELECT topic FROM notes ORDER BY note_id"}


def oidc_settings(idp: AuthServer, **overrides: Any) -> OidcSettings:
    return OidcSettings(**{
        "issuer": idp.issuer, "audience": idp.audience, "role_claim": "role",
        "role_map": {"analyst": "client", "platform-admin": "admin"}, "databases_claim": "databases",
        "policy_claims": {"tenant_id": "tenant_id"}, "console_client_id": CLIENT_ID, **overrides})


@pytest.fixture(scope="module")
async def tenants_dsn(pg: PgServer, demo_dsn: str) -> AsyncIterator[str]:
    """notes(tenant_id, topic) under row-level security: a role sees the rows of the tenant its
    ``nl2sql.tenant_id`` setting names (set per transaction from the token's claim), the gateway's included."""
    name = f"nl2sql_sso_{uuid.uuid4().hex[:10]}"
    reader = urlsplit(demo_dsn).username
    await admin(pg.admin_dsn, f'CREATE DATABASE "{name}"')
    await admin(pg.dsn(name),
                 "CREATE TABLE notes (note_id int PRIMARY KEY, tenant_id int NOT NULL, topic text NOT NULL)",
                 "INSERT INTO notes VALUES (1, 1, 'Quarterly review'), (2, 2, 'Merger plans')",
                 "ALTER TABLE notes ENABLE ROW LEVEL SECURITY",
                 "CREATE POLICY tenant_rows ON notes FOR SELECT "
                 "USING (tenant_id = NULLIF(current_setting('nl2sql.tenant_id', true), '')::int)",
                 f'GRANT SELECT ON notes TO "{reader}"')
    yield pg.dsn(name, user=reader, password=os.environ.get("NL2SQL_TEST_READER_PASSWORD"))
    await admin(pg.admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
async def sso(pg: PgServer, demo_dsn: str, tenants_dsn: str, idp_server: AuthServer,
              tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Console]:
    """The console of a gateway that takes end users' tokens from the test authorization server."""
    oidc = oidc_settings(idp_server, databases=["tenants"])
    async with serve_console(pg, demo_dsn, tmp_path_factory.mktemp("sso"), oidc, {"tenants": tenants_dsn}) as served:
        yield served


# --- without a browser: config.json and the content security policy -----------------------------------------


async def test_config_offers_api_keys_only_without_oidc(console: Console) -> None:
    async with httpx.AsyncClient(base_url=console.base) as http:
        answer = await http.get("/console/config.json")  # no key: it is read before anyone signs in
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"auth_enabled": True, "api_key": True, "oidc": None, "oidc_error": None}
        assert answer.headers["cache-control"] == "no-store"
        assert (await http.get("/console/")).headers["content-security-policy"] == CSP


async def test_config_names_the_console_client_and_the_servers_endpoints(sso: Console, idp: AuthServer) -> None:
    async with httpx.AsyncClient(base_url=sso.base) as http:
        answer = await http.get("/console/config.json")
        again = await http.get("/console/config.json")
    assert answer.status_code == 200, answer.text
    assert answer.json() == again.json() == {
        "auth_enabled": True, "api_key": True, "oidc_error": None,
        "oidc": {"issuer": idp.issuer, "client_id": CLIENT_ID,
                 "authorization_endpoint": f"{idp.issuer}/authorize", "token_endpoint": f"{idp.issuer}/token",
                 "revocation_endpoint": f"{idp.issuer}/revoke", "scopes": ["openid", "offline_access", "nl2sql:schema", "nl2sql:query", "nl2sql:ask", "nl2sql:feedback"],
                 "resource": None}}
    # The metadata is fetched once and reused (a public route must not make the gateway call the IdP per request).
    assert idp.hits["/.well-known/openid-configuration"] <= 1


async def test_the_page_may_fetch_the_token_endpoint_and_nothing_else_foreign(sso: Console, idp: AuthServer) -> None:
    async with httpx.AsyncClient(base_url=sso.base) as http:
        page = await http.get("/console/")
        script = await http.get("/console/app.js")
        api = await http.get("/v1/whoami")
    policy = page.headers["content-security-policy"]
    assert policy == csp([idp.issuer])
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["connect-src"] == f"'self' {idp.issuer}"
    # Everything else stays this origin only: no script, style, frame or form target from the IdP.
    assert {k: v for k, v in directives.items() if k != "connect-src"} == {
        k: v for k, v in (d.strip().split(" ", 1) for d in CSP.split(";")) if k != "connect-src"}
    assert script.headers["content-security-policy"] == CSP  # only the document's policy governs fetches
    assert api.status_code == 401  # the API behind it still needs a key or a token


async def test_without_the_idps_metadata_the_page_offers_api_keys_and_says_why(pg: PgServer, demo_dsn: str,
                                                                              tmp_path: Path) -> None:
    dead = OidcSettings(issuer=f"http://127.0.0.1:{free_port()}", audience="gw", console_client_id=CLIENT_ID,
                        http_timeout_s=2.0)
    async with serve_console(pg, demo_dsn, tmp_path, dead) as served, httpx.AsyncClient(base_url=served.base) as http:
        config = (await http.get("/console/config.json")).json()
        page = await http.get("/console/")
        me = await http.get("/v1/whoami", headers={"Authorization": f"Bearer {served.keys['client']}"})
    assert config["oidc"] is None and config["api_key"] is True and "discovery" in config["oidc_error"]
    assert page.headers["content-security-policy"] == CSP
    assert me.status_code == 200  # the API key path does not depend on the identity provider


def test_signin_doctests() -> None:
    assert doctest.testmod(gateway.auth.signin).failed == 0


@pytest.mark.parametrize("url", [
    "http://idp.example.com/token",                      # plain http beyond loopback
    "https://idp.example.com; script-src * 'unsafe-inline'",  # a directive smuggled into the CSP
    "https://idp.example.com/token 'unsafe-eval'",
    "https://*.example.com/token",                       # a wildcard source
    "https://user:pw@idp.example.com/token",             # credentials
    "https://idp.example.com/token#frag",
    "javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "https://idp.example.com:99999/token",
    "//idp.example.com/token",
    "",
])
def test_an_endpoint_a_browser_may_not_be_sent_to_is_refused(url: str) -> None:
    with pytest.raises(errors.IdentityProviderUnavailable):
        endpoint({"token_endpoint": url}, "token_endpoint")
    with pytest.raises(errors.IdentityProviderUnavailable):
        endpoint({}, "token_endpoint")


def test_https_and_loopback_http_endpoints_are_taken() -> None:
    for url in ("https://login.example.com/realms/a/protocol/openid-connect/token", "http://127.0.0.1:9/token",
                "http://localhost:8080/token", "http://[::1]:8080/token"):
        assert endpoint({"token_endpoint": url}, "token_endpoint") == url


async def test_a_hostile_metadata_document_offers_no_sign_in(idp: AuthServer, monkeypatch: pytest.MonkeyPatch) -> None:
    evil = {**idp.metadata(), "token_endpoint": "https://evil.example.com; script-src *"}
    monkeypatch.setattr(idp, "metadata", lambda: evil)
    auth = Authenticator(AuthSettings(oidc=oidc_settings(idp)), lambda: None)
    try:
        with pytest.raises(errors.IdentityProviderUnavailable, match="token_endpoint"):
            await console_sign_in(auth)
    finally:
        await auth.aclose()


async def test_an_unreachable_idp_is_not_asked_again_within_the_refresh_interval() -> None:
    settings = OidcSettings(issuer=f"http://127.0.0.1:{free_port()}", audience="gw", console_client_id=CLIENT_ID,
                            http_timeout_s=2.0)
    auth = Authenticator(AuthSettings(oidc=settings), lambda: None)
    try:
        assert auth.oidc is not None
        with pytest.raises(errors.IdentityProviderUnavailable, match="discovery"):
            await console_sign_in(auth)
        first = auth.oidc._metadata_attempted_at
        with pytest.raises(errors.IdentityProviderUnavailable):
            await console_sign_in(auth)
        assert auth.oidc._metadata_attempted_at == first  # no second fetch: answered from the failure
    finally:
        await auth.aclose()


async def test_no_sign_in_without_a_console_client_or_with_access_control_off(idp: AuthServer) -> None:
    for settings in (AuthSettings(oidc=oidc_settings(idp, console_client_id=None)),
                     AuthSettings(enabled=False, oidc=oidc_settings(idp))):
        auth = Authenticator(settings, lambda: None)
        try:
            assert await console_sign_in(auth) is None
        finally:
            await auth.aclose()
    assert idp.hits["/.well-known/openid-configuration"] == 0
    assert await console_sign_in(None) is None


def test_scopes_default_to_a_refresh_token_the_required_ones_and_the_operations(idp: AuthServer) -> None:
    assert oidc_settings(idp, required_scopes=["nl2sql:query"]).console_scope_list == [
        "openid", "offline_access", "nl2sql:query", "nl2sql:schema", "nl2sql:ask", "nl2sql:feedback"]
    assert oidc_settings(idp, console_scopes=["openid", "api"]).console_scope_list == ["openid", "api"]


# --- in the browser -------------------------------------------------------------------------------------------


def storage(driver: Any, name: str) -> Any:
    raw = driver.execute_script("return sessionStorage.getItem(arguments[0])", name)
    return json.loads(raw) if raw is not None else None


def api_call(driver: Any, method: str, path: str, body: Any = None) -> Any:
    """A call through the console's own api.js (the module app.js uses: same credentials, same refresh)."""
    return driver.execute_async_script("""
        const [method, path, body, done] = arguments;
        import('./api.js').then(api => api.request(method, path, body === null ? undefined : body))
          .then(result => done({ result }), error => done({ error: String(error.message || error) }));
    """, method, path, body)


def who(driver: Any) -> str:
    return str(find(driver, "#who").text)


def test_alice_signs_in_with_the_idp_runs_sql_as_herself_and_signs_out(browser: Any, sso: Console, idp: AuthServer,
                                                                       capfd: pytest.CaptureFixture[str]) -> None:
    idp.add_client(CLIENT_ID, [sso.url])
    idp.login_as("alice")
    browser.get(sso.url + "#ask")
    button = wait(browser, visible("#oidc-signin"), "the sign-in button")
    screenshot(browser, "sign-in-oidc")
    button.click()
    wait(browser, lambda d: "alice (client)" in who(d), "alice named after the round trip")
    # Nothing of the answer stays in the address bar or the history entry; the page she was on is back.
    assert browser.current_url == sso.url + "#ask"
    assert idp.hits["/authorize"] == 1 and idp.hits["/token"] == 1
    tokens = storage(browser, "nl2sql.oidc")
    assert tokens["access_token"] == idp.issued[-1] and tokens["refresh_token"] in idp.refresh_tokens
    assert storage(browser, "nl2sql.oidc.pending") is None  # state and verifier: used once, then gone
    assert browser.execute_script("return localStorage.length") == 0
    # Her tenant claim reaches the database through /v1/sql: the row policy shows her tenant's notes only.
    answer = api_call(browser, "POST", "../v1/sql", TENANT_SQL)
    assert answer.get("result", {}).get("rows") == [["Quarterly review"]], answer
    me = api_call(browser, "GET", "../v1/whoami")["result"]
    assert me["user"] == "alice" and me["client"] == CLIENT_ID and me["policy"] == {"tenant_id": "1"}
    assert console_errors(browser) == []
    find(browser, "#who button").click()  # sign out
    wait(browser, visible("#oidc-signin"), "the sign-in page again")
    assert storage(browser, "nl2sql.oidc") is None
    assert tokens["refresh_token"] not in idp.refresh_tokens  # revoked at the identity provider
    assert api_call(browser, "GET", "../v1/whoami")["error"].startswith("The gateway did not accept")
    logged = "".join(capfd.readouterr())
    assert "/v1/whoami" in logged  # the gateway's request log is captured here, and holds no token
    assert tokens["access_token"] not in logged and tokens["refresh_token"] not in logged


def test_a_refused_access_token_is_refreshed_once_and_the_call_goes_through(browser: Any, sso: Console,
                                                                             idp: AuthServer) -> None:
    idp.add_client(CLIENT_ID, [sso.url])
    idp.login_as("bob")
    browser.get(sso.url)
    wait(browser, visible("#oidc-signin"), "the sign-in button").click()
    wait(browser, lambda d: "bob (client)" in who(d), "bob signed in")
    held = storage(browser, "nl2sql.oidc")
    # A token the gateway refuses (401 invalid_token): the console refreshes and sends the call again.
    browser.execute_script("sessionStorage.setItem('nl2sql.oidc', JSON.stringify(arguments[0]))",
                           {**held, "access_token": idp.mint("bob", ttl_s=-120)})
    answer = api_call(browser, "POST", "../v1/sql", TENANT_SQL)
    assert answer.get("result", {}).get("rows") == [["Merger plans"]], answer
    refreshed = storage(browser, "nl2sql.oidc")
    assert idp.hits["/token"] == 2 and refreshed["access_token"] == idp.issued[-1]
    assert refreshed["refresh_token"] != held["refresh_token"]  # rotated; the old one is spent
    # A token about to expire is refreshed before it is sent (no 401 first).
    browser.execute_script("sessionStorage.setItem('nl2sql.oidc', JSON.stringify(arguments[0]))",
                           {**refreshed, "expires_at": 1})
    assert api_call(browser, "GET", "../v1/whoami")["result"]["user"] == "bob"
    assert idp.hits["/token"] == 3
    # A refresh the identity provider refuses signs the tab out, in words.
    idp.refresh_tokens.clear()
    browser.execute_script("sessionStorage.setItem('nl2sql.oidc', JSON.stringify(arguments[0]))",
                           {**storage(browser, "nl2sql.oidc"), "expires_at": 1})
    browser.get(sso.url)
    message = wait(browser, lambda d: find(d, "#signin-error").text, "the expired sign-in in words")
    assert "expired" in message and storage(browser, "nl2sql.oidc") is None


def _code_for(idp: AuthServer, sso: Console, challenge: str, state: str) -> str:
    """An authorization code for the console's client, fetched by hand (as if the browser had gone there)."""
    answer = httpx.get(authorization_url(idp, CLIENT_ID, sso.url, challenge, state=state, scope="openid"))
    assert answer.status_code in {302, 307}, answer.text
    return parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]


def test_a_forged_or_replayed_answer_is_refused_and_its_code_never_exchanged(
        browser: Any, sso: Console, idp: AuthServer, capfd: pytest.CaptureFixture[str]) -> None:
    idp.add_client(CLIENT_ID, [sso.url])
    browser.get(sso.url)
    wait(browser, visible("#oidc-signin"), "the sign-in page")
    verifier, challenge = pkce_pair()

    def pending(state: str) -> None:
        browser.execute_script("sessionStorage.setItem('nl2sql.oidc.pending', JSON.stringify(arguments[0]))",
                               {"state": state, "verifier": verifier, "redirect_uri": sso.url, "hash": "",
                                "at": int(browser.execute_script("return Date.now()"))})

    def answer_with(code: str, state: str) -> str:
        browser.get(f"{sso.url}?code={code}&state={state}")
        message = wait(browser, lambda d: find(d, "#signin-error").text, "the refusal in words")
        assert browser.current_url == sso.url  # the code left the address bar all the same
        return str(message)

    # An answer no sign-in in this tab asked for (login CSRF: someone else's code): refused, not exchanged.
    stolen = _code_for(idp, sso, challenge, "theirs")
    assert "does not belong" in answer_with(stolen, "theirs")
    # A sign-in in flight, but the answer carries another state.
    pending("mine")
    assert "does not belong" in answer_with(stolen, "forged")
    assert storage(browser, "nl2sql.oidc.pending") is None  # spent by the attempt: it cannot be retried
    assert idp.hits["/token"] == 0 and stolen in idp.codes
    # The right state completes the sign-in once; the same answer again finds no sign-in to complete.
    pending("mine")
    browser.get(f"{sso.url}?code={stolen}&state=mine")
    wait(browser, lambda d: "alice (client)" in who(d), "signed in by the matching answer")
    assert idp.hits["/token"] == 1 and browser.current_url == sso.url
    assert "does not belong" in answer_with(stolen, "mine")
    assert idp.hits["/token"] == 1
    # An identity provider's refusal is said in words.
    pending("denied")
    browser.get(f"{sso.url}?error=access_denied&error_description=no+user+is+logged+in&state=denied")
    message = wait(browser, lambda d: find(d, "#signin-error").text, "the refusal in words")
    assert "did not sign you in: no user is logged in" in message
    logged = "".join(capfd.readouterr())
    assert "path=/console/" in logged and stolen not in logged  # request logs name the path, not the query
