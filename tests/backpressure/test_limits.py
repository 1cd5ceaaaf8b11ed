"""Backpressure on a real app: requests beyond a bound are refused at once with 429/503 and Retry-After,
never queued without bound; body and SQL sizes are bounded; the request deadline reaches every stage."""

from __future__ import annotations

import asyncio
import threading

import asyncpg
import httpx
import pytest

from gateway.auth.keys import new_token
from gateway.observability import metrics
from gateway.store import api_keys
from gateway.testing.scripted_llm import Reply, ScriptedLLM
from tests.backpressure.helpers import ANSWER, ENDLESS_SQL, ask, build_settings, codes, running

GUARD_S = 60.0  # a bound on waiting for a condition, far beyond what it takes even on a loaded machine


async def answered(http: httpx.AsyncClient, body: dict[str, str]) -> httpx.Response:
    """``POST /v1/sql`` until it answers 200 (bounded by GUARD_S). Under a short request deadline a loaded
    machine may cut even ``SELECT 1``: that is a 504 ``deadline_exceeded``, and the only other answer allowed
    before the 200. A connection that never came back would make every try wait and fail: the bound ends it."""
    async with asyncio.timeout(GUARD_S):
        while (response := await http.post("/v1/sql", json=body)).status_code != 200:
            assert (response.status_code, response.json()["code"]) == (504, "deadline_exceeded"), response.text
    return response


def rejected(reason: str) -> float:
    return metrics.REJECTED.labels(reason)._value.get()


async def test_requests_beyond_max_in_flight_answer_overloaded_at_once(demo_dsn: str, llm: ScriptedLLM) -> None:
    # The LLM answers only when the test says so: the two admitted questions hold their slots until every
    # other one has been refused, however slowly a loaded machine delivers the six requests.
    release = threading.Event()
    llm.add_reply(Reply(ANSWER, hold=release))
    settings = build_settings(demo_dsn, llm.base_url, backpressure={"max_in_flight": 2})
    before = rejected("in_flight")
    async with running(settings) as (http, _):
        slow = [asyncio.create_task(ask(http)) for _ in range(6)]
        try:
            async with asyncio.timeout(GUARD_S):
                while len(llm.requests) < 2 or rejected("in_flight") - before < 4:
                    await asyncio.sleep(0.01)
            health = await http.get("/healthz")  # probes are never shed
            metrics_page = await http.get("/metrics")
        finally:
            release.set()
        responses = await asyncio.gather(*slow)
    assert codes(responses) == ["ok", "ok"] + ["overloaded"] * 4
    refused = [r for r in responses if r.status_code == 503]
    assert all(r.headers["retry-after"] == "1" and r.json()["limit"] == 2 for r in refused)
    assert all(r.headers["content-type"] == "application/problem+json" for r in refused)
    assert health.status_code == 200 and metrics_page.status_code == 200
    assert "nl2sql_in_flight 2.0" in metrics_page.text
    assert len(llm.requests) == 2  # refused requests never reached the LLM
    assert rejected("in_flight") - before == 4


async def test_in_flight_slots_are_given_back_after_errors(demo_dsn: str) -> None:
    settings = build_settings(demo_dsn, backpressure={"max_in_flight": 1})
    async with running(settings) as (http, _):
        for body in ({"database": "demo", "sql": "SELEC 1"}, {"database": "nope", "sql": "SELECT 1"},
                     {"database": "demo", "sql": "DELETE FROM orders"}, {"database": "demo"}):
            assert (await http.post("/v1/sql", json=body)).status_code in (404, 422)
        assert (await http.post("/v1/sql", content=b"x" * 2_000_000,
                                headers={"content-type": "application/json"})).status_code == 413
        ok = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT 1 AS one"})
    assert ok.status_code == 200 and ok.json()["rows"] == [[1]]


async def test_rate_limit_per_client_address_when_auth_is_off(demo_dsn: str) -> None:
    # 0.01 token/s: the bucket cannot refill between these few requests (that would take 100 s, even on a
    # loaded machine they take well under one), so the outcome does not depend on speed.
    settings = build_settings(demo_dsn, backpressure={"rate_per_s": 0.01, "burst": 3})
    before = rejected("rate_limited")
    async with running(settings) as (http, _):
        responses = [await http.post("/v1/check", json={"sql": "SELECT 1"}) for _ in range(5)]
        health = [await http.get("/healthz") for _ in range(5)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429]
    problem = responses[-1].json()
    assert problem["code"] == "too_many_requests" and "backpressure.rate_per_s" in problem["detail"]
    assert 1 <= int(responses[-1].headers["retry-after"]) <= 100 and problem["retry_after_s"] > 0  # 1 / rate
    assert all(r.status_code == 200 for r in health)
    assert rejected("rate_limited") - before == 2


async def test_rate_limit_per_api_key_with_role_limits(demo_dsn: str, fresh_db: str) -> None:
    settings = build_settings(demo_dsn, store_dsn=fresh_db, auth=True,
                              backpressure={"rate_per_s": 0.001, "burst": 1,  # no refill within the test
                                            "roles": {"dba": {"rate_per_s": 0.001, "burst": 3}}})
    async with running(settings) as (http, state):
        assert state.store is not None
        tokens = {}
        for name, role in (("alice", "client"), ("bob", "client"), ("dora", "dba")):
            token = new_token()
            await api_keys.create(state.store.pool, key_id=token.key_id, name=name, role=role, databases=["*"],
                                  pg_role=None, secret_sha256=token.secret_sha256)
            tokens[name] = {"authorization": f"Bearer {token.token}"}

        async def statuses(name: str, n: int) -> list[int]:
            return [(await http.post("/v1/check", json={"sql": "SELECT 1"}, headers=tokens[name])).status_code
                    for _ in range(n)]

        alice, bob, dora = await statuses("alice", 3), await statuses("bob", 2), await statuses("dora", 4)
        anonymous = await http.post("/v1/check", json={"sql": "SELECT 1"})
    assert alice == [200, 429, 429]  # the client role's default limit: burst 1
    assert bob == [200, 429]  # another key has its own bucket
    assert dora == [200, 200, 200, 429]  # the dba role's own limit
    assert anonymous.status_code == 401  # authentication comes first: no key, no bucket


async def test_queued_llm_calls_are_bounded(demo_dsn: str, llm: ScriptedLLM) -> None:
    release = threading.Event()  # the running call holds its slot until the other three have arrived
    llm.add_reply(Reply(ANSWER, hold=release))
    settings = build_settings(demo_dsn, llm.base_url, llm={"max_concurrency": 1, "max_queued": 1})
    before = rejected("llm_queue")
    async with running(settings) as (http, _):
        asked = [asyncio.create_task(ask(http)) for _ in range(4)]
        try:
            async with asyncio.timeout(GUARD_S):
                while len(llm.requests) < 1 or rejected("llm_queue") - before < 2:
                    await asyncio.sleep(0.01)
        finally:
            release.set()
        responses = await asyncio.gather(*asked)
    # one call runs, one waits for its slot, the other two are refused without queueing
    assert codes(responses) == ["ok", "ok", "overloaded", "overloaded"]
    refused = [r for r in responses if r.status_code == 503]
    assert all("llm.max_queued" in r.json()["detail"] and r.headers["retry-after"] == "1" for r in refused)
    assert len(llm.requests) == 2
    assert rejected("llm_queue") - before == 2


async def test_body_and_sql_size_limits(demo_dsn: str) -> None:
    settings = build_settings(demo_dsn, limits={"max_sql_bytes": 100}, server={"max_body_bytes": 4096})
    async with running(settings) as (http, _):
        big_sql = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT 1" + " " * 200})
        declared = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT 1", "pad": "x" * 5000})

        async def chunks():  # no Content-Length: the limit must hold on the bytes actually received
            for _ in range(10):
                yield b" " * 1000

        streamed = await http.post("/v1/sql", content=chunks(), headers={"content-type": "application/json"})
    assert (big_sql.status_code, big_sql.json()["code"]) == (413, "sql_too_large")
    assert big_sql.json()["limit"] == 100
    assert (declared.status_code, declared.json()["code"]) == (413, "payload_too_large")
    assert (streamed.status_code, streamed.json()["code"]) == (413, "payload_too_large")


async def test_deadline_caps_the_statement_timeout(demo_dsn: str) -> None:
    settings = build_settings(demo_dsn, limits={"statement_timeout_ms": 60_000}, server={"request_timeout_s": 1.0})
    async with running(settings) as (http, _):
        spent = await http.post("/v1/sql", json={"database": "demo", "sql": ENDLESS_SQL})
        after = await answered(http, {"database": "demo", "sql": "SELECT 1 AS one"})
    assert (spent.status_code, spent.json()["code"]) == (504, "deadline_exceeded")
    assert spent.json()["sqlstate"] == "57014" and "server.request_timeout_s" in spent.json()["detail"]
    assert after.status_code == 200  # the connection went back to the pool clean


async def test_statement_timeout_still_wins_when_it_is_shorter(demo_dsn: str) -> None:
    settings = build_settings(demo_dsn, limits={"statement_timeout_ms": 300}, server={"request_timeout_s": 30})
    async with running(settings) as (http, _):
        response = await http.post("/v1/sql", json={"database": "demo", "sql": ENDLESS_SQL})
    assert (response.status_code, response.json()["code"]) == (504, "statement_timeout")


async def test_deadline_caps_llm_calls(demo_dsn: str, llm: ScriptedLLM) -> None:
    llm.add_reply(Reply(ANSWER, delay_s=5.0))
    settings = build_settings(demo_dsn, llm.base_url, server={"request_timeout_s": 1.0}, llm={"timeout_s": 30})
    async with running(settings) as (http, state):
        response = await ask(http)
        assert state.llm is not None and state.llm.breaker.state == "closed"  # the budget's fault, not the LLM's
    assert (response.status_code, response.json()["code"]) == (504, "deadline_exceeded")


async def test_deadline_caps_the_wait_for_a_pooled_connection(demo_dsn: str) -> None:
    # The pool's only connection is held by the test; the request's wait for it is cut by its 1 s deadline,
    # not by the 30 s acquire timeout.
    settings = build_settings(demo_dsn, pool_max_size=1, limits={"acquire_timeout_s": 30},
                              server={"request_timeout_s": 1.0})
    async with running(settings) as (http, state):
        async with state.target("demo").pool.acquire():
            waiter = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT 1"})
        after = await answered(http, {"database": "demo", "sql": "SELECT 1"})
    assert (waiter.status_code, waiter.json()["code"]) == (504, "deadline_exceeded")
    assert after.status_code == 200


@pytest.mark.parametrize("max_tracked", [2])
async def test_rate_limit_memory_is_bounded(max_tracked: int) -> None:
    from gateway.serving.backpressure import RateLimiter

    limiter = RateLimiter(rate_per_s=1.0, burst=1, max_tracked=max_tracked)
    for i in range(1000):
        limiter.take(f"client-{i}", now=0.0)
    assert len(limiter) == max_tracked
    assert limiter.take("client-999", now=0.0) > 0  # recent keys keep their state
    assert limiter.take("client-0", now=0.0) == 0.0  # an evicted one starts again with a full bucket


async def test_connections_left_by_deadline_cuts_do_not_leak(demo_dsn: str, demo_admin_dsn: str) -> None:
    app_name = "bp-deadline-leak"
    dsn = demo_dsn + ("&" if "?" in demo_dsn else "?") + f"application_name={app_name}"
    settings = build_settings(dsn, pool_max_size=3, server={"request_timeout_s": 0.5})
    async with running(settings) as (http, _):
        await asyncio.gather(*(http.post("/v1/sql", json={"database": "demo", "sql": ENDLESS_SQL})
                               for _ in range(6)))
        ok = await answered(http, {"database": "demo", "sql": "SELECT 1"})
        admin = await asyncpg.connect(demo_admin_dsn)
        try:  # a cancelled backend turns idle once it has processed the cancel: waited for, bounded
            async with asyncio.timeout(GUARD_S):
                while True:
                    sessions = await admin.fetch("SELECT state FROM pg_stat_activity WHERE application_name = $1",
                                                 app_name)
                    if all(s["state"] != "active" for s in sessions):
                        break
                    await asyncio.sleep(0.05)
        finally:
            await admin.close()
    assert ok.status_code == 200
    assert len(sessions) <= 3 and all(s["state"] != "active" for s in sessions)
