"""Who is asking, end to end: end-user tokens from the test authorization server, through the real edges.

A real gateway behind uvicorn on loopback, access control on, ``[auth.oidc]`` pointed at the test
authorization server (discovery, JWKS; gateway.testing.authserver) with ``policy_claims = {tenant_id =
"tenant_id"}``; the two tenant databases of tests/rowpolicy/conftest.py (``rls``: Postgres decides,
``filters``: the gateway's row-filter rules decide) and the scripted LLM, which records every prompt.

Every allowed statement of corpus.sql goes through ``/v1/sql`` (alice and bob, both databases),
``/v1/ask`` (the LLM is scripted to answer with the statement, so generation, check, rewrite, execution and
reflection all run) and MCP ``run_sql`` / ``ask`` over streamable HTTP. No returned cell may carry a mark of
the other tenant, both modes must return the same rows, and no prompt the LLM received may hold a value
that only the other tenant's rows contain (the caller's own question and the SQL the script wrote aside).
"""

from __future__ import annotations

import asyncio
import decimal
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import asyncpg
import httpx
import jwt
import pytest

from gateway.auth import new_token
from gateway.settings import (
    AuthSettings,
    BackpressureSettings,
    MagicSettings,
    OidcSettings,
    StoreSettings,
)
from gateway.state import GatewayState
from gateway.store import api_keys
from gateway.testing.authserver import AuthServer, authorization_url, pkce_pair
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.ask.helpers import is_judge, sql
from tests.auth.conftest import store_dsn  # noqa: F401 - a store database per module
from tests.mcp_server.conftest import http_client, served
from tests.rowpolicy.conftest import TENANT_TABLES, Tenants, settings
from tests.rowpolicy.test_corpus import ALLOWED, bag

DATABASES = ("rls", "filters")
CONCURRENCY = 4
REDIRECT = "http://127.0.0.1:9/callback"
T = TypeVar("T")

# Questions name values of tenant 2 now and then, so that value hints would be tempted to confirm them.
QUESTIONS = (
    "orders of TENANT2 dave?",
    "what did customer erin buy",
    "how much did TENANT2 frank spend in apac",
    "show the TENANT2 invoice memo",
    "read the TENANT2 secret note",
    "orders with status TENANT2 shipped",
    "customers in region apac",
    "order 1010 worth 9100.00",
    "events labelled TENANT2 login or TENANT2 old",
    "ssn 999-99-9991",
    "how many orders are there",
    "list the customers by region",
    "total amount per status",
)


# --- what belongs to whom -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Marks:
    """Values found in only one tenant's rows (as text, the way a prompt or a cell would spell them)."""

    only: dict[int, frozenset[str]]  # tenant -> values no other tenant's row nor products holds

    def patterns(self, tenant: int) -> list[re.Pattern[str]]:
        """Each value of ``tenant`` as a word, leaving out those the other tenant's values spell inside
        theirs ('login' in 'TENANT2 login')."""
        others = [v for t, values in self.only.items() if t != tenant for v in values]
        return [re.compile(rf"(?<![\w.-]){re.escape(v)}(?![\w]|\.\d)") for v in sorted(self.only[tenant])
                if len(v) >= 3 and not any(v in other for other in others)]


def spellings(value: Any) -> set[str]:
    if value is None or isinstance(value, bool):
        return set()
    if isinstance(value, decimal.Decimal):
        out = {str(value), str(value.normalize())}
        if value == value.to_integral_value():
            out.add(str(int(value)))
        return out
    if isinstance(value, date):
        return {value.isoformat()}
    return {str(value)}


@pytest.fixture(scope="module")
async def marks(tenants: Tenants) -> Marks:
    conn = await asyncpg.connect(tenants.rls_admin)  # the superuser: row-level security does not apply
    try:
        seen: dict[int, set[str]] = {1: set(), 2: set()}
        for table in (*TENANT_TABLES, "events_archive", "order_totals"):
            for row in await conn.fetch(f"SELECT * FROM {table}"):
                seen[row["tenant_id"]].update(s for v in row.values() for s in spellings(v))
        shared = {s for row in await conn.fetch("SELECT * FROM products") for v in row.values()
                  for s in spellings(v)}
    finally:
        await conn.close()
    return Marks({1: frozenset(seen[1] - seen[2] - shared), 2: frozenset(seen[2] - seen[1] - shared)})


NUMBER = re.compile(r"-?\d+(\.\d+)?")


def tenant2_cells(value: Any) -> list[Any]:
    """Tenant 2's marks in a returned value (JSON as the API sends it): TENANT2 in text, ids and quantities
    from 1000 up, amounts (exact decimal strings) from 9000 up, its SSNs and order dates, inside row text and
    JSON too."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in tenant2_cells(v)]
    if isinstance(value, list):
        return [x for v in value for x in tenant2_cells(v)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [value] if value >= 1000 else []
    text = str(value)
    if "TENANT2" in text or re.search(r"999-99-999|2024-01-06|2024-02-11|2024-03-16|2024-04-01|apac", text):
        return [text]
    if NUMBER.fullmatch(text):
        return [text] if decimal.Decimal(text) >= 9000 else []
    if text[:1] in "{[":
        try:
            return tenant2_cells(json.loads(text))
        except ValueError:
            return []
    if text[:1] == "(":  # a row cast to text
        return [text] if any(NUMBER.fullmatch(p) and decimal.Decimal(p) >= 1000
                             for p in text.strip("()").split(",")) else []
    return []


def tenant1_cells(value: Any, marks: Marks) -> list[Any]:
    """Tenant 1's marks: any value only tenant 1's rows hold (names, SSNs, memos, labels, dates), as a whole
    cell or as a word inside row text and JSON (a number alone proves nothing: tenant 2 has small counts too)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in tenant1_cells(v, marks)]
    if isinstance(value, list):
        return [x for v in value for x in tenant1_cells(v, marks)]
    if value is None or isinstance(value, (bool, int, float)):
        return []
    text = str(value)
    words = [v for v in marks.only[1] if not NUMBER.fullmatch(v)]
    if text in words:
        return [text]
    inside = [w for w in words if len(w) >= 3 and not any(w in other for other in marks.only[2])]
    return [text] if any(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text) for w in inside) else []


HINT_WORDS = re.compile(r"^- '[^'\n]*' likely means", re.MULTILINE)


def prompt_leaks(requests: Iterable[LLMRequest], marks: Marks, tenants: Iterable[int],
                 own: Iterable[str]) -> list[tuple[str, str]]:
    """(value, excerpt) for each value of ``tenants``' rows found in a recorded prompt, once the caller's own
    words (``own``: the questions asked, the SQL the script answered with) are taken out."""
    patterns = [p for t in tenants for p in marks.patterns(t)]
    own = sorted(set(own), key=len, reverse=True)
    found: list[tuple[str, str]] = []
    for request in requests:
        text = request.text
        for words in own:
            text = text.replace(words, " ")
        # A value hint quotes the question's words before what they match: those words are the caller's.
        text = HINT_WORDS.sub("- likely means", text)
        for pattern in patterns:
            for hit in pattern.finditer(text):
                found.append((hit.group(0), text[max(0, hit.start() - 160):hit.end() + 80]))
    return found


# --- the served gateway ------------------------------------------------------------------------------

@dataclass
class Served:
    base: str
    state: GatewayState
    http: httpx.AsyncClient

    @property
    def mcp(self) -> str:
        return self.base + "/mcp"

    async def post(self, path: str, token: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return await self.http.post(path, json=body, headers={"Authorization": f"Bearer {token}"})

    async def key(self) -> str:
        """An API key (no end user, no row-policy values), straight in the store as `keys create` does."""
        assert self.state.store is not None
        token = new_token()
        await api_keys.create(self.state.store.pool, key_id=token.key_id, name=f"e2e-{token.key_id}", role="client",
                              databases=list(DATABASES), pg_role=None, secret_sha256=token.secret_sha256)
        return token.token


@pytest.fixture(scope="module")
async def e2e(tenants: Tenants, store_dsn: str, idp_server: AuthServer, llm_server: ScriptedLLM,  # noqa: F811
              tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    folder = Path(tmp_path_factory.mktemp("e2e"))
    (folder / "rules").mkdir()
    (folder / "guidelines").mkdir()
    config = settings(tenants, folder / "rules", base_url=llm_server.base_url, pool_max_size=4)
    config.store = StoreSettings(dsn=store_dsn)
    config.auth = AuthSettings(enabled=True, cache_ttl_s=0.0, oidc=OidcSettings(
        issuer=idp_server.issuer, audience=idp_server.audience,  # keys found through discovery
        role_claim="role", role_map={"analyst": "client", "platform-admin": "admin"}, databases=list(DATABASES),
        policy_claims={"tenant_id": "tenant_id"},
        jwks_refresh_interval_s=0.0))  # a rotated key is fetched at its first token, not a minute later
    config.magic = MagicSettings(schedule=False)
    config.guidelines_dir = folder / "guidelines"
    config.backpressure = BackpressureSettings(unauthenticated_per_s=1000.0, unauthenticated_burst=100_000)
    async with served(config) as (base, state), httpx.AsyncClient(base_url=base, timeout=60) as http:
        yield Served(base, state, http)


async def gathered(calls: Iterable[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run the calls a few at a time (the machine is small; the order of results is the order of calls)."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(call: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await call()

    return await asyncio.gather(*(one(c) for c in calls))


def code_flow_token(idp: AuthServer, user: str) -> str:
    """An access token the way a client gets one: register, /authorize with PKCE S256 (the server approves
    for the logged-in user and redirects), then exchange the code at /token. All over real HTTP."""
    verifier, challenge = pkce_pair()
    idp.login_as(user)
    with httpx.Client(timeout=10) as http:
        registered = http.post(f"{idp.issuer}/register", json={
            "redirect_uris": [REDIRECT], "client_name": "e2e", "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"]})
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        redirected = http.get(authorization_url(idp, client_id, REDIRECT, challenge, state="e2e",
                                                scope="openid nl2sql:query nl2sql:ask"))
        assert redirected.status_code == 302, redirected.text
        query = parse_qs(urlsplit(redirected.headers["location"]).query)
        assert query["state"] == ["e2e"]
        tokens = http.post(f"{idp.issuer}/token", data={
            "grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": REDIRECT,
            "client_id": client_id, "code_verifier": verifier})
        assert tokens.status_code == 200, tokens.text
    return str(tokens.json()["access_token"])


def kid_of(token: str) -> str:
    return str(jwt.get_unverified_header(token)["kid"])


def problem_code(answer: httpx.Response) -> str | None:
    if answer.headers.get("content-type", "").startswith("application/problem+json"):
        return str(answer.json().get("code"))
    return None


def script_corpus(llm: ScriptedLLM) -> dict[str, str]:
    """Answer every generation and reflection with the corpus statement the question's tag names (the
    judge, if asked, says yes); the statements by tag."""
    by_tag = {f"[{who}{i:03d}]": statement for i, (_, statement, _) in enumerate(ALLOWED) for who in "ab"}

    def answer(request: LLMRequest) -> str | None:
        if is_judge(request):
            return "<verdict>yes</verdict>"
        tag = TAG.search(request.last_user) or TAG.search(request.text)
        return sql(by_tag[tag.group(0)]) if tag else None

    llm.add(answer)
    return by_tag


TAG = re.compile(r"\[[ab]\d{3}\]")


def question(i: int, user: str = "alice") -> str:
    """The i-th statement's question, tagged with the asker's initial: its prompts can be told apart."""
    return f"[{user[0]}{i:03d}] {QUESTIONS[i % len(QUESTIONS)]}"


def asked_by(request: LLMRequest) -> str:
    tag = TAG.search(request.last_user) or TAG.search(request.text)
    assert tag is not None, request.text[:500]
    return {"a": "alice", "b": "bob"}[tag.group(0)[1]]


# --- /v1/sql -------------------------------------------------------------------------------------------

def test_the_corpus_covers_the_constructs() -> None:
    text = "\n".join(statement.upper() for _, statement, _ in ALLOWED)
    assert len(ALLOWED) >= 100
    for construct in (" JOIN ", "LEFT JOIN", "FULL JOIN", "WITH ", "WITH RECURSIVE", "UNION", "INTERSECT",
                      "EXCEPT", "LATERAL", " OVER (", "EXISTS", "COUNT(", "SUM(", "IN (SELECT"):
        assert construct in text, construct


async def test_sql_for_both_tenants_in_both_modes_across_a_key_rotation(e2e: Served, idp: AuthServer,
                                                                        marks: Marks) -> None:
    alice = code_flow_token(idp, "alice")  # the real authorization-code flow with PKCE
    bob = idp.mint("bob")
    assert kid_of(alice) == kid_of(bob) == "rsa-1"
    me = (await e2e.http.get("/v1/whoami", headers={"Authorization": f"Bearer {alice}"})).json()
    assert me["user"] == "alice" and me["policy"] == {"tenant_id": "1"} and set(me["databases"]) == set(DATABASES)

    half = len(ALLOWED) // 2
    tokens = {"alice": alice, "bob": bob}
    answers: dict[tuple[int, str, str], httpx.Response] = {}

    async def run(indexes: range) -> None:
        keys = [(i, user, db) for i in indexes for user in ("alice", "bob") for db in DATABASES]
        got = await gathered(lambda i=i, user=user, db=db: e2e.post(
            "/v1/sql", tokens[user], {"database": db, "sql": ALLOWED[i][1]}) for i, user, db in keys)
        answers.update(zip(keys, got, strict=True))

    await run(range(half))
    # Key rotation midway: new tokens carry the new kid, which the gateway has never seen; it fetches the
    # published keys again and the new tokens keep working (the old ones too: their key is still published).
    fetched = idp.jwks_fetches
    new_kid = idp.rotate()
    tokens = {"alice": idp.mint("alice"), "bob": idp.mint("bob")}
    assert kid_of(tokens["alice"]) == kid_of(tokens["bob"]) == new_kid
    await run(range(half, len(ALLOWED)))
    assert idp.jwks_fetches > fetched
    still = await e2e.post("/v1/sql", alice, {"database": "rls", "sql": "SELECT count(*) FROM orders"})
    assert still.json()["rows"] == [[4]], still.text

    failures: list[str] = []
    seen = {"alice": 0, "bob": 0}  # statements whose rows show the caller's own tenant: the scan can see marks
    for i, (name, statement, _) in enumerate(ALLOWED):
        for user in ("alice", "bob"):
            rows = {}
            for db in DATABASES:
                answer = answers[(i, user, db)]
                if answer.status_code != 200:
                    failures.append(f"{name} / {user} / {db}: {answer.status_code} {answer.text[:300]}")
                    continue
                body = answer.json()
                rows[db] = body
                leaked = tenant2_cells(body["rows"]) if user == "alice" else tenant1_cells(body["rows"], marks)
                if leaked:
                    failures.append(f"{name} / {user} / {db}: the other tenant's values {leaked[:5]}")
            if len(rows) == 2:
                if bag(rows["rls"]["rows"]) != bag(rows["filters"]["rows"]):
                    failures.append(f"{name} / {user}: modes differ: {rows['rls']['rows']} != "
                                    f"{rows['filters']['rows']}")
                if [c["name"] for c in rows["rls"]["columns"]] != [c["name"] for c in rows["filters"]["columns"]]:
                    failures.append(f"{name} / {user}: columns differ")
                own = tenant1_cells(rows["rls"]["rows"], marks) if user == "alice" else \
                    tenant2_cells(rows["rls"]["rows"])
                seen[user] += bool(own)
    assert not failures, "\n".join(failures)
    assert seen["alice"] >= 30 and seen["bob"] >= 30, seen


# --- /v1/ask -------------------------------------------------------------------------------------------

async def test_ask_shows_neither_rows_nor_prompts_of_the_other_tenant(e2e: Served, idp: AuthServer,
                                                                      llm: ScriptedLLM, marks: Marks) -> None:
    by_tag = script_corpus(llm)
    tokens = {"alice": idp.mint("alice"), "bob": idp.mint("bob", alg="ES256")}  # the EC key signs bob's
    keys = [(i, "alice", db) for i in range(len(ALLOWED)) for db in DATABASES]
    keys += [(i, "bob", db) for i in range(0, len(ALLOWED), 4) for db in DATABASES]
    got = await gathered(lambda i=i, user=user, db=db: e2e.post(
        "/v1/ask", tokens[user], {"database": db, "question": question(i, user)}) for i, user, db in keys)
    answers = dict(zip(keys, got, strict=True))

    failures: list[str] = []
    shown: Counter[str] = Counter()  # answers showing the caller's own tenant: the scan sees marks
    for (i, user, db), answer in answers.items():
        name, statement, _ = ALLOWED[i]
        if answer.status_code != 200:
            failures.append(f"{name} / {user} / {db}: {answer.status_code} {answer.text[:300]}")
            continue
        body = answer.json()
        first = body["attempts"][0]
        if first["sql"] != statement or first["row_count"] is None:  # generated, checked, rewritten and run
            failures.append(f"{name} / {user} / {db}: the statement did not run: {first}")
        leaked = tenant2_cells(body["rows"]) if user == "alice" else tenant1_cells(body["rows"], marks)
        if leaked:
            failures.append(f"{name} / {user} / {db}: the other tenant's values {leaked[:5]}")
        shown[user] += bool(tenant1_cells(body["rows"], marks) if user == "alice" else tenant2_cells(body["rows"]))
    for i, user, db in keys:
        if db == "rls" and all(answers[(i, user, d)].status_code == 200 for d in DATABASES):
            a, b = (answers[(i, user, d)].json() for d in DATABASES)
            if a["sql"] == b["sql"] and bag(a["rows"]) != bag(b["rows"]):
                failures.append(f"{ALLOWED[i][0]} / {user}: modes differ: {a['rows']} != {b['rows']}")
    assert not failures, "\n".join(failures)
    assert shown["alice"] >= 60 and shown["bob"] >= 15, shown

    own = [question(i, user) for i, user, _ in keys] + list(by_tag.values())
    assert len(llm.requests) >= len(keys)
    prompts = {user: [r for r in llm.requests if asked_by(r) == user] for user in ("alice", "bob")}
    for user, other in (("alice", 2), ("bob", 1)):
        leaks = prompt_leaks(prompts[user], marks, [other], own)
        assert not leaks, (user, sorted({v for v, _ in leaks}), leaks[:3])
    # The scan can find something: the caller's own values do reach the prompts (RLS samples, result rows).
    assert prompt_leaks(prompts["alice"], marks, [1], own), "no value of alice's own rows in any prompt"


# --- MCP over streamable HTTP -------------------------------------------------------------------------

def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, [getattr(c, "text", c) for c in result.content]
    return dict(result.structured_content)


async def test_mcp_run_sql_and_ask_with_bearer_tokens(e2e: Served, idp: AuthServer, llm: ScriptedLLM,
                                                      marks: Marks) -> None:
    by_tag = script_corpus(llm)
    tokens = {"alice": idp.mint("alice"), "bob": idp.mint("bob", alg="ES256")}
    failures: list[str] = []
    ran: dict[tuple[int, str, str, str], dict[str, Any]] = {}
    shown: Counter[tuple[str, str]] = Counter()  # answers showing the caller's own tenant: the token counted
    for user, token in tokens.items():
        asks = range(len(ALLOWED)) if user == "alice" else range(1, len(ALLOWED), 4)
        keys = [(i, "run_sql", db) for i in range(len(ALLOWED)) for db in DATABASES]
        keys += [(i, "ask", db) for i in asks for db in DATABASES]
        async with http_client(e2e.mcp, token) as client:
            got = await gathered(lambda i=i, tool=tool, db=db: client.call_tool(
                tool, {"database": db, "sql": ALLOWED[i][1]} if tool == "run_sql" else
                {"database": db, "question": question(i, user)}) for i, tool, db in keys)
        for (i, tool, db), result in zip(keys, got, strict=True):
            name = ALLOWED[i][0]
            if result.is_error:
                failures.append(f"{name} / {user} / {tool} / {db}: {[getattr(c, 'text', c) for c in result.content]}")
                continue
            body = dict(result.structured_content)
            ran[(i, user, tool, db)] = body
            leaked = tenant2_cells(body["rows"]) if user == "alice" else tenant1_cells(body["rows"], marks)
            if leaked:
                failures.append(f"{name} / {user} / {tool} / {db}: the other tenant's values {leaked[:5]}")
            shown[(user, tool)] += bool(tenant1_cells(body["rows"], marks) if user == "alice"
                                        else tenant2_cells(body["rows"]))
            if tool == "ask" and (body["attempts"][0]["sql"] != ALLOWED[i][1] or body["status"] == "blocked"):
                failures.append(f"{name} / {user} / ask / {db}: the statement did not run: {body['attempts'][0]}")
    for (i, user, tool, db), body in ran.items():
        other = ran.get((i, user, tool, "filters"))
        if db == "rls" and other is not None and bag(body["rows"]) != bag(other["rows"]):
            failures.append(f"{ALLOWED[i][0]} / {user} / {tool}: modes differ: {body['rows']} != {other['rows']}")
    assert not failures, "\n".join(failures)
    assert len(ran) >= 2 * 2 * len(ALLOWED) + 2 * len(ALLOWED)
    assert min(shown[(u, "run_sql")] for u in tokens) >= 60 and shown[("alice", "ask")] >= 60, shown

    own = [question(i, u) for i in range(len(ALLOWED)) for u in tokens] + list(by_tag.values())
    for user, other in (("alice", 2), ("bob", 1)):
        leaks = prompt_leaks([r for r in llm.requests if asked_by(r) == user], marks, [other], own)
        assert not leaks, (user, sorted({v for v, _ in leaks}), leaks[:3])


# --- a token without the tenant claim ------------------------------------------------------------------

async def test_a_token_without_the_tenant_claim(e2e: Served, idp: AuthServer, llm: ScriptedLLM,
                                                marks: Marks) -> None:
    """Postgres's policy matches no row without the value; the gateway's filters refuse to run at all."""
    token = idp.mint("alice", omit=("tenant_id",))
    me = (await e2e.http.get("/v1/whoami", headers={"Authorization": f"Bearer {token}"})).json()
    assert me["user"] == "alice" and me["policy"] == {}
    keys = [(i, db) for i in range(len(ALLOWED)) for db in DATABASES]
    got = await gathered(lambda i=i, db=db: e2e.post("/v1/sql", token, {"database": db, "sql": ALLOWED[i][1]})
                         for i, db in keys)
    failures: list[str] = []
    answered: set[str] = set()
    for (i, db), answer in zip(keys, got, strict=True):
        name = ALLOWED[i][0]
        if db == "filters" and problem_code(answer) == "row_policy_claim_missing":
            assert answer.status_code == 403
            continue
        if answer.status_code != 200:
            failures.append(f"{name} / {db}: {answer.status_code} {answer.text[:300]}")
            continue
        rows = answer.json()["rows"]
        leaked = tenant2_cells(rows) + tenant1_cells(rows, marks)
        if leaked:
            failures.append(f"{name} / {db}: rows of a tenant {leaked[:5]}")
        if db == "filters":
            answered.add(name)
    assert not failures, "\n".join(failures)
    # Only statements that read no filtered table run in the filters database without the value.
    assert answered == {"products only", "recursive cte named like the table", "values only"}, answered
    counted = await e2e.post("/v1/sql", token, {"database": "rls", "sql": "SELECT count(*) FROM orders"})
    assert counted.json()["rows"] == [[0]]

    # /v1/ask and MCP: the same, and the prompts show neither tenant's values.
    by_tag = script_corpus(llm)
    sample = range(0, len(ALLOWED), 5)
    asked = await gathered(lambda i=i, db=db: e2e.post("/v1/ask", token, {"database": db, "question": question(i)})
                           for i in sample for db in DATABASES)
    for (i, db), answer in zip([(i, db) for i in sample for db in DATABASES], asked, strict=True):
        if db == "filters":
            assert problem_code(answer) == "row_policy_claim_missing", (ALLOWED[i][0], answer.text[:300])
        else:
            assert answer.status_code == 200, answer.text[:300]
            rows = answer.json()["rows"]
            assert not tenant2_cells(rows) + tenant1_cells(rows, marks), (ALLOWED[i][0], rows)
    async with http_client(e2e.mcp, token) as client:
        refused = await client.call_tool("run_sql", {"database": "filters", "sql": "SELECT * FROM orders"})
        assert refused.is_error and "row_policy_claim_missing" in json.dumps(
            [getattr(c, "text", "") for c in refused.content])
        empty = structured(await client.call_tool("run_sql", {"database": "rls", "sql": "SELECT * FROM orders"}))
        assert empty["rows"] == []
    own = [question(i) for i in sample] + list(by_tag.values())
    leaks = prompt_leaks(llm.requests, marks, [1, 2], own)
    assert not leaks, (sorted({v for v, _ in leaks}), leaks[:3])


async def test_bob_and_alice_see_only_their_own_orders(e2e: Served, idp: AuthServer) -> None:
    sql_ = "SELECT o.order_id, c.name FROM orders o LEFT JOIN customers c USING (customer_id) ORDER BY 1"
    for user, expected in (("alice", [[10, "alice"], [11, "alice"], [12, "bob"], [13, None]]),
                           ("bob", [[1010, "TENANT2 dave"], [1011, "TENANT2 erin"], [1012, None],
                                    [1013, "TENANT2 frank"]])):
        for db in DATABASES:
            answer = await e2e.post("/v1/sql", idp.mint(user), {"database": db, "sql": sql_})
            assert answer.json()["rows"] == expected, (user, db, answer.text)


# --- verified examples ----------------------------------------------------------------------------------

async def test_an_approved_example_of_tenant_2_never_reaches_tenant_1s_prompts(e2e: Served, idp: AuthServer,
                                                                               llm: ScriptedLLM, marks: Marks) -> None:
    """bob's answer, marked correct and approved by an administrator, spells tenant 2's values in its SQL: a
    caller with row-policy values is never shown it as a few-shot example (an API key without values is)."""
    bobs = "SELECT o.order_id, o.amount FROM orders o JOIN customers c USING (customer_id) WHERE c.name = 'TENANT2 dave'"
    llm.add(lambda r: sql(bobs) if "[bx]" in r.text else sql("SELECT count(*) FROM orders") if "[ax]" in r.text
            else None)
    bob, dana = idp.mint("bob"), idp.mint("dana")  # dana: an administrator of tenant 1
    for db in DATABASES:
        asked = await e2e.post("/v1/ask", bob, {"database": db, "question": "[bx] what did TENANT2 dave order"})
        assert asked.status_code == 200 and asked.json()["rows"] == [[1010, "9100.00"]], asked.text
        fed = await e2e.post("/v1/feedback", bob, {"request_id": asked.json()["request_id"], "verdict": "correct"})
        assert fed.status_code == 201, fed.text
        listed = await e2e.http.get("/v1/examples", params={"status": "proposed", "database": db},
                                    headers={"Authorization": f"Bearer {dana}"})
        [example] = [e for e in listed.json()["examples"] if e["sql"] == bobs]
        approved = await e2e.post(f"/v1/examples/{example['id']}/approve", dana)
        assert approved.status_code == 200, approved.text

    before = len(llm.requests)
    alice = idp.mint("alice")
    for db in DATABASES:
        answer = await e2e.post("/v1/ask", alice, {"database": db, "question": "[ax] which orders did dave place"})
        assert answer.status_code == 200 and answer.json()["rows"] == [[4]], answer.text
    prompts = llm.requests[before:]
    assert len(prompts) == 2 and not any(bobs in r.text for r in prompts)
    leaks = prompt_leaks(prompts, marks, [2], ["[ax] which orders did dave place"])
    assert not leaks, (sorted({v for v, _ in leaks}), leaks[:3])

    # The example is there to be shown: a caller without row-policy values (an API key) gets it.
    before = len(llm.requests)
    keyed = await e2e.post("/v1/ask", await e2e.key(), {"database": "rls", "question": "[ax] which orders did dave place"})
    assert keyed.status_code == 200, keyed.text
    assert any(bobs in r.text for r in llm.requests[before:])
