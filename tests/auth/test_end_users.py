"""The end user owns what a request leaves behind: answers, conversations, rate-limit buckets, token budget.

End-user principals (OIDC) are built directly here and driven through ``Gateway``; API keys over HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway import errors
from gateway.auth import Principal, Role
from gateway.service import Gateway as PyGateway
from gateway.serving.backpressure import RateLimits
from gateway.settings import BackpressureSettings, LLMSettings, RateLimit, Settings, StoreSettings
from gateway.testing.scripted_llm import ScriptedLLM
from tests.auth.conftest import Gateway, auth_settings, bearer

QUESTION = "How many regions are there?"
REGIONS_SQL = "<sql>SELECT count(*) AS n FROM regions</sql>"


def user(name: str, client: str = "bi-frontend", role: Role = Role.CLIENT) -> Principal:
    return Principal(name=name, role=role, databases=frozenset({"demo"}), user=name, client=client)


@pytest.fixture
def settings_with(demo_dsn: str, store_dsn: str, llm_server: ScriptedLLM,
                  tmp_path: Path) -> Callable[..., Settings]:
    def make(store: bool = True, **llm: Any) -> Settings:
        settings = auth_settings(demo_dsn, store_dsn, tmp_path, llm_url=llm_server.base_url)
        return settings.model_copy(update={
            "llm": LLMSettings(**{**settings.llm.model_dump(), **llm}),
            "store": StoreSettings(dsn=store_dsn) if store else StoreSettings(),
        })
    return make


@asynccontextmanager
async def opened(settings: Settings) -> AsyncIterator[PyGateway]:
    async with PyGateway(settings) as gw:
        yield gw


@pytest.fixture(autouse=True)
def regions(llm_server: ScriptedLLM) -> None:
    llm_server.reset()
    llm_server.add_reply(REGIONS_SQL)


async def test_two_users_behind_one_client_own_separate_conversations(settings_with: Callable[..., Settings]) -> None:
    alice, bob = user("alice"), user("bob")
    async with opened(settings_with()) as gw:
        first = await gw.answer(gw.question("demo", QUESTION, principal=alice))
        assert first.conversation_id is not None
        # Bob, through the same OAuth client, cannot continue (or read) Alice's conversation, nor learn it exists.
        with pytest.raises(errors.UnknownConversation) as refused:
            await gw.conversation(gw.question("demo", "and per country?", principal=bob,
                                              conversation_id=first.conversation_id))
        with pytest.raises(errors.UnknownConversation) as never:
            await gw.conversation(gw.question("demo", "and per country?", principal=bob,
                                              conversation_id="c_doesnotexist"))
        assert type(refused.value) is type(never.value)
        # A header cannot make an end user speak as another owner.
        with pytest.raises(errors.UnknownConversation):
            await gw.conversation(gw.question("demo", "and per country?", principal=bob, client="user:alice",
                                              conversation_id=first.conversation_id))
        follow = await gw.answer(gw.question("demo", "and per country?", principal=alice,
                                             conversation_id=first.conversation_id))
        assert follow.conversation_id == first.conversation_id
        own = await gw.answer(gw.question("demo", QUESTION, principal=bob))
        assert own.conversation_id not in (None, first.conversation_id)
        assert gw._live.store is not None
        pool = gw._live.store.pool
        conversation = await pool.fetchrow("SELECT * FROM conversations WHERE id = $1", first.conversation_id)
        audited = await pool.fetchrow("SELECT * FROM request_audit WHERE request_id = $1", first.request_id)
    assert (conversation["owner"], conversation["end_user"], conversation["via"]) == \
        ("user:alice", "alice", "client:bi-frontend")
    assert (audited["owner"], audited["end_user"], audited["via"]) == ("user:alice", "alice", "client:bi-frontend")


async def test_an_end_user_dba_approves_only_their_own_answer(settings_with: Callable[..., Settings]) -> None:
    """Feedback, the correction and the example it proposes record the end user and the client."""
    alice, bob = user("alice", role=Role.DBA), user("bob", role=Role.DBA)
    async with opened(settings_with()) as gw:
        answer = await gw.answer(gw.question("demo", QUESTION, principal=alice))
        assert answer.request_id
        for who in (bob, Principal(name="svc", role=Role.ADMIN, databases=frozenset({"*"}), key_id="0123456789ab")):
            with pytest.raises(errors.UnknownRequest):
                await gw.feedback(answer.request_id, "incorrect", corrected_sql="SELECT 7 AS n", principal=who)
        stored, created = await gw.feedback(answer.request_id, "incorrect", corrected_sql="SELECT 7 AS n",
                                            principal=alice)
        assert gw._live.store is not None
        pool = gw._live.store.pool
        feedback = await pool.fetchrow("SELECT * FROM feedback WHERE id = $1", stored.id)
        correction = await pool.fetchrow("SELECT * FROM corrections WHERE id = $1", stored.correction_id)
        example = await pool.fetchrow("SELECT * FROM verified_examples WHERE id = $1", stored.example_id)
    assert created and stored.example_status == "approved"  # an authenticated dba end user reviews at once
    assert (feedback["client_id"], feedback["end_user"], feedback["via"]) == ("user:alice", "alice",
                                                                             "client:bi-frontend")
    assert (correction["owner"], correction["end_user"], correction["via"]) == ("user:alice", "alice",
                                                                               "client:bi-frontend")
    assert (example["proposed_by"], example["end_user"], example["via"]) == ("user:alice", "alice",
                                                                            "client:bi-frontend")


async def test_an_api_keys_answer_records_the_key(gw: Gateway) -> None:
    token = await gw.key(databases=("demo",))
    response = await gw.http.post("/v1/ask", json={"database": "demo", "question": QUESTION},
                                  headers={**bearer(token), "X-Client-Id": "someone-else"})
    assert response.status_code == 200, response.text
    assert gw.state.store is not None
    row = await gw.state.store.pool.fetchrow("SELECT owner, end_user, via FROM request_audit WHERE request_id = $1",
                                             response.json()["request_id"])
    key_id = token.split("_")[1]
    assert (row["owner"], row["end_user"], row["via"]) == (f"key:{key_id}", None, f"key:{key_id}")


# --- the daily token budget --------------------------------------------------------------------------------


async def test_the_daily_token_budget_is_per_user_and_survives_a_restart(
        settings_with: Callable[..., Settings], llm_server: ScriptedLLM) -> None:
    settings = settings_with(daily_token_budget_per_user=100)  # one scripted answer spends ~2,800 tokens
    alice, bob = user("budget-alice"), user("budget-bob")
    async with opened(settings) as gw:
        first = await gw.answer(gw.question("demo", QUESTION, principal=alice))
        spent = sum(a.tokens["prompt"] + a.tokens["completion"] for a in first.attempts)
        assert spent > 100
        before = len(llm_server.requests)
        with pytest.raises(errors.TokenBudgetExceeded) as exceeded:
            await gw.answer(gw.question("demo", QUESTION, principal=alice))
        assert len(llm_server.requests) == before  # refused before the LLM was called
        assert await gw.answer(gw.question("demo", QUESTION, principal=bob))  # Bob has a budget of his own
        assert gw._live.store is not None
        counted = await gw._live.store.pool.fetchval(
            "SELECT tokens FROM token_usage WHERE owner = 'user:budget-alice'")
    assert counted == spent
    assert exceeded.value.code == "token_budget_exceeded" and exceeded.value.status == 429
    assert 0 < exceeded.value.retry_after <= 86_400  # type: ignore[operator]
    assert exceeded.value.extra["spent"] == spent and exceeded.value.extra["budget"] == 100
    async with opened(settings) as gw:  # another process, the same store: the count holds
        with pytest.raises(errors.TokenBudgetExceeded):
            await gw.answer(gw.question("demo", QUESTION, principal=alice))


async def test_the_token_budget_over_http_is_a_429_with_retry_after(
        demo_dsn: str, store_dsn: str, llm_server: ScriptedLLM, tmp_path: Path) -> None:
    import httpx

    from gateway.api.app import create_app
    from gateway.auth import new_token
    from gateway.store import api_keys

    settings = auth_settings(demo_dsn, store_dsn, tmp_path, llm_url=llm_server.base_url)
    settings = settings.model_copy(update={"llm": LLMSettings(**{**settings.llm.model_dump(),
                                                                 "daily_token_budget_per_user": 100})})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            token = new_token()
            await api_keys.create(app.state.gateway.store.pool, key_id=token.key_id, name=f"b-{token.key_id}",
                                  role="client", databases=["demo"], pg_role=None, secret_sha256=token.secret_sha256)
            body = {"database": "demo", "question": QUESTION}
            first = await http.post("/v1/ask", json=body, headers=bearer(token.token))
            second = await http.post("/v1/ask", json=body, headers=bearer(token.token))
            streamed = await http.post("/v1/ask", json=body,
                                       headers={**bearer(token.token), "Accept": "text/event-stream"})
    assert first.status_code == 200, first.text
    for refused in (second, streamed):
        assert refused.status_code == 429 and refused.json()["code"] == "token_budget_exceeded", refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert 0 < int(refused.headers["retry-after"]) <= 86_400


@pytest.mark.parametrize("fail_open", [True, False])
async def test_without_a_store_the_budget_fails_open_or_closed_as_set(
        settings_with: Callable[..., Settings], fail_open: bool) -> None:
    settings = settings_with(store=False, daily_token_budget_per_user=100, token_budget_fail_open=fail_open)
    async with opened(settings) as gw:
        q = gw.question("demo", QUESTION, principal=user("alice"))
        if fail_open:
            assert (await gw.answer(q)).status == "ok"
        else:
            with pytest.raises(errors.StoreNotConfigured):
                await gw.answer(q)


# --- rate limits ----------------------------------------------------------------------------------------------


def test_each_end_user_has_a_bucket_and_a_frontend_key_keeps_its_cap() -> None:
    # Rates so low that no token comes back while the test runs: only the bursts count.
    limits = RateLimits(BackpressureSettings(roles={"client": RateLimit(rate_per_s=0.0001, burst=3)},
                                             user_rate_per_s=0.0001, user_burst=1))
    frontend = "0123456789ab"

    def via_key(name: str) -> Principal:
        return Principal(name=name, role=Role.CLIENT, databases=frozenset({"demo"}), key_id=frontend, user=name)

    limits.check_principal(via_key("alice"), "10.0.0.1")
    with pytest.raises(errors.TooManyRequests) as alice_again:
        limits.check_principal(via_key("alice"), "10.0.0.1")
    assert "backpressure.user_rate_per_s" in alice_again.value.detail
    limits.check_principal(via_key("bob"), "10.0.0.1")  # Bob's own bucket; the key has one token left
    with pytest.raises(errors.TooManyRequests) as key_spent:
        limits.check_principal(via_key("carol"), "10.0.0.1")
    assert "backpressure.roles.client" in key_spent.value.detail
    # Users behind an OAuth client (no key) are limited one by one too; the user rate applies to them.
    limits.check_principal(user("dave"), "10.0.0.1")
    with pytest.raises(errors.TooManyRequests):
        limits.check_principal(user("dave"), "10.0.0.2")
    limits.check_principal(user("erin"), "10.0.0.1")


def test_without_a_user_rate_each_user_gets_the_role_limit() -> None:
    limits = RateLimits(BackpressureSettings(roles={"client": RateLimit(rate_per_s=0.0001, burst=2)}))
    assert limits.enabled
    for _ in range(2):
        limits.check_principal(user("alice"), "10.0.0.1")
    with pytest.raises(errors.TooManyRequests):
        limits.check_principal(user("alice"), "10.0.0.1")
    limits.check_principal(user("bob"), "10.0.0.1")
