"""An exact, verified match answers without the LLM (store.exact_match_answers), which keeps the demo
useful offline; a stale example (its SQL no longer runs) falls back to the LLM."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from gateway.settings import StoreSettings
from gateway.store import examples
from tests.ask.helpers import ask_settings, gateway, post_ask


async def add_example(store_dsn: str, question: str, sql: str) -> None:
    pool = await asyncpg.create_pool(store_dsn, min_size=1, max_size=1)
    try:
        await examples.add(pool, database="demo", question=question, sql=sql, source="dba")
    finally:
        await pool.close()


async def test_exact_verified_match_answers_without_any_llm(demo_dsn: str, fresh_db: str,
                                                            dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, dirs, base_url=None)  # no LLM at all
    settings.store = StoreSettings(dsn=fresh_db, exact_match_answers=True)
    async with gateway(settings) as (http, _):
        await add_example(fresh_db, "How many regions are there?", "SELECT count(*) AS regions FROM regions")
        await add_example(fresh_db, "Which column is gone?", "SELECT no_such_column FROM regions")

        answer = await post_ask(http, "  how many REGIONS are there")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["status"] == "ok" and body["rows"] == [[7]]
        assert [a["source"] for a in body["attempts"]] == ["verified_example"]
        assert body["attempts"][0]["tokens"] == {"prompt": 0, "completion": 0}

        # Not verified: the LLM is needed, and there is none.
        unknown = await post_ask(http, "How many products are there?")
        assert unknown.status_code == 503 and unknown.json()["code"] == "llm_not_configured"
        # Verified but stale: never answered from the example; the LLM path takes over.
        stale = await post_ask(http, "Which column is gone?")
        assert stale.status_code == 503 and stale.json()["code"] == "llm_not_configured"


async def test_switched_off_by_default(demo_dsn: str, fresh_db: str, dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, dirs, base_url=None)
    settings.store = StoreSettings(dsn=fresh_db)
    async with gateway(settings) as (http, _):
        await add_example(fresh_db, "How many regions are there?", "SELECT count(*) FROM regions")
        response = await post_ask(http, "How many regions are there?")
        assert response.status_code == 503 and response.json()["code"] == "llm_not_configured"


async def test_a_caller_under_a_row_policy_is_never_answered_with_another_callers_sql(
        demo_dsn: str, fresh_db: str, dirs: dict[str, Path]) -> None:
    """A verified example's SQL and question are everyone's: their literals may spell another tenant's values.
    A caller with row-policy values is neither answered with it nor shown the stored questions."""
    from gateway import Gateway, errors
    from gateway.auth import Principal, Role

    settings = ask_settings(demo_dsn, dirs, base_url=None)  # no LLM at all
    settings.store = StoreSettings(dsn=fresh_db, exact_match_answers=True)
    tenant = Principal(name="alice", role=Role.CLIENT, databases=frozenset({"demo"}), user="alice",
                       claims=(("tenant_id", "1"),))
    question = "How many regions does Zephyr Holdings use?"
    async with Gateway(settings) as gw:
        await add_example(fresh_db, question, "SELECT count(*) AS regions FROM regions WHERE name <> 'Zephyr'")
        everyone = await gw.ask(gw.question("demo", question))
        assert everyone.chosen is not None and everyone.chosen.source == "verified_example"
        try:
            await gw.ask(gw.question("demo", question, principal=tenant))
        except errors.LLMNotConfigured as exc:
            assert exc.extra["verified_questions"] == [] and "Zephyr" not in exc.detail
        else:
            raise AssertionError("a caller under a row policy was answered from a verified example")


async def test_without_an_llm_a_verified_follow_up_is_answered_and_a_failed_one_is_not_offered(
        demo_dsn: str, fresh_db: str, dirs: dict[str, Path]) -> None:
    """Issue 30 point 3: the console's second question, sent as a follow-up, is answered when it is verified;
    and the error never names the very question that just failed as one that works."""
    settings = ask_settings(demo_dsn, dirs, base_url=None)  # no LLM at all
    settings.store = StoreSettings(dsn=fresh_db, exact_match_answers=True)
    async with gateway(settings) as (http, _):
        await add_example(fresh_db, "How many regions are there?", "SELECT count(*) AS regions FROM regions")
        await add_example(fresh_db, "How many products are there?", "SELECT count(*) AS products FROM products")
        await add_example(fresh_db, "Which column is gone?", "SELECT no_such_column FROM regions")
        first = await post_ask(http, "How many regions are there?")
        assert first.status_code == 200, first.text
        conversation = first.json()["conversation_id"]
        assert conversation
        second = await post_ask(http, "How many products are there?", conversation_id=conversation)
        assert second.status_code == 200, second.text
        assert second.json()["attempts"][0]["source"] == "verified_example"
        stale = await post_ask(http, "Which column is gone?", conversation_id=conversation)
        problem = stale.json()
        assert stale.status_code == 503 and problem["code"] == "llm_not_configured"
        assert "Which column is gone?" not in problem["verified_questions"]
        assert "Which column is gone?" not in problem["detail"]
        assert "How many products are there?" in problem["verified_questions"]


async def test_starter_questions_are_the_approved_ones_and_none_under_a_row_policy(
        demo_dsn: str, fresh_db: str, dirs: dict[str, Path]) -> None:
    from gateway import Gateway, errors
    from gateway.auth import Principal, Role

    settings = ask_settings(demo_dsn, dirs, base_url=None)
    settings.store = StoreSettings(dsn=fresh_db)
    analyst = Principal(name="ann", role=Role.CLIENT, databases=frozenset({"demo"}))
    tenant = Principal(name="ten", role=Role.CLIENT, databases=frozenset({"demo"}), claims=(("tenant_id", "1"),))
    elsewhere = Principal(name="bob", role=Role.CLIENT, databases=frozenset({"warehouse"}))
    async with Gateway(settings) as gw:
        await add_example(fresh_db, "How many regions are there?", "SELECT count(*) AS regions FROM regions")
        pool = await asyncpg.create_pool(fresh_db, min_size=1, max_size=1)
        try:  # proposed by a client: not verified, so neither a starter nor an offline answer
            await examples.add(pool, database="demo", question="Which tenant pays most?",
                               sql="SELECT 1", source="feedback", proposed_by="key:x")
        finally:
            await pool.close()
        assert await gw.starters("demo", principal=analyst) == [
            {"question": "How many regions are there?", "source": "verified"}]
        assert await gw.starters("demo", principal=tenant) == []
        try:
            await gw.starters("demo", principal=elsewhere)
        except errors.Forbidden:
            pass
        else:
            raise AssertionError("starters of a database the key may not use")
