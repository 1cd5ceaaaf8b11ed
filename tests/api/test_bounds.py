"""Resource bounds on the real demo database: the cost gate (the real planner), memory counted as rows
arrive, the process-wide result budget, and legitimate BI queries passing all of it with default limits."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest

from gateway import errors, safety
from gateway.api.app import create_app
from gateway.eval.questions import load_questions, shipped
from gateway.execute.budget import ResultBudget, fetch_rows
from gateway.settings import BackpressureSettings
from tests.api.conftest import demo_settings
from tests.safety.bi_queries import BI_QUERIES

NEW_CODES = {"value_too_large", "regex_too_costly", "regex_not_constant", "cartesian_product",
             "generate_series_too_large"}


@asynccontextmanager
async def gateway(demo_dsn: str, backpressure: BackpressureSettings | None = None,
                  **limits: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    settings = demo_settings(demo_dsn, **limits)
    if backpressure is not None:
        settings = settings.model_copy(update={"backpressure": backpressure})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield http, app.state.gateway


async def sql(http: httpx.AsyncClient, text: str) -> httpx.Response:
    return await http.post("/v1/sql", json={"database": "demo", "sql": text})


# -- the cost gate ---------------------------------------------------------------------------------------

async def test_cost_gate_refuses_what_the_planner_sees_before_running_it(demo_dsn: str) -> None:
    # Statically fine (a range join relates the two sides), but every order against every later order's
    # items: the planner knows. statement_timeout is 1.5 s: had it run, the answer would be a 504, not this 422.
    async with gateway(demo_dsn, statement_timeout_ms=1500) as (http, _):
        response = await sql(http, "SELECT count(*) FROM orders o JOIN order_items i ON i.order_id > o.order_id "
                                   "JOIN payments p ON p.order_id > i.order_id")
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["code"] == "cost_too_high"
    assert response.headers["content-type"] == "application/problem+json"
    assert problem["estimated_rows"] > 1e9 and problem["estimated_cost"] > 1e6
    assert problem["max_plan_rows"] == 1e8 and problem["max_plan_cost"] == 1e8
    assert "max_plan_rows" in problem["detail"] and "max_plan_cost" in problem["detail"]


async def test_range_self_join_is_gated_by_rows_with_a_lowered_limit(demo_dsn: str) -> None:
    query = "SELECT count(*) FROM order_items a JOIN order_items b ON a.quantity < b.quantity"
    assert safety.check(query).allowed  # a range join: legitimate shape, left to the gate
    async with gateway(demo_dsn, max_plan_rows=1_000_000) as (http, _):
        response = await sql(http, query)
        small = await sql(http, "SELECT count(*) FROM order_items WHERE quantity > 2")
    assert response.status_code == 422 and response.json()["code"] == "cost_too_high"
    assert response.json()["estimated_rows"] > 1_000_000
    assert small.status_code == 200, small.text


async def test_lowered_cost_limit_refuses_a_scan_and_lets_small_queries_and_explain_through(demo_dsn: str) -> None:
    async with gateway(demo_dsn, max_plan_cost=50) as (http, _):
        scan = await sql(http, "SELECT count(*) FROM orders")
        tiny = await sql(http, "SELECT 1 AS one")
        # EXPLAIN runs nothing; the gate cannot EXPLAIN an EXPLAIN and steps back to its savepoint.
        explain = await sql(http, "EXPLAIN SELECT count(*) FROM orders")
        after = await sql(http, "SELECT 2 AS two")  # the connection came back clean
    assert scan.status_code == 422 and scan.json()["code"] == "cost_too_high"
    assert scan.json()["estimated_cost"] > 50 and scan.json()["max_plan_cost"] == 50
    assert tiny.status_code == 200 and tiny.json()["rows"] == [[1]]
    assert explain.status_code == 200, explain.text
    assert "Aggregate" in explain.json()["rows"][0][0]
    assert after.status_code == 200 and after.json()["rows"] == [[2]]


async def test_legitimate_queries_pass_the_static_bounds_and_the_gate_with_default_limits(demo_dsn: str) -> None:
    gold = [text for q in load_questions(shipped("demo")) for text in q.gold_sql]
    assert len(gold) >= 40 and len(BI_QUERIES) >= 50
    async with gateway(demo_dsn, statement_timeout_ms=20_000) as (http, state):
        policy = state.policy("demo")
        for text in [*gold, *BI_QUERIES]:
            verdict = safety.check(text, policy)
            assert not set(verdict.codes) & NEW_CODES, (text, verdict.findings)
            response = await sql(http, text)
            code = response.json().get("code") if response.status_code != 200 else None
            assert code != "cost_too_high", (text, response.text)
            if text in BI_QUERIES:
                assert response.status_code == 200, (text, response.text)


# -- memory counted as rows arrive -----------------------------------------------------------------------

class CountingCursor:
    def __init__(self, cursor: Any) -> None:
        self.cursor, self.rows, self.batches = cursor, 0, 0

    async def fetch(self, n: int) -> list[Any]:
        records = await self.cursor.fetch(n)
        self.rows += len(records)
        self.batches += 1
        return records


async def test_result_too_large_is_raised_before_the_whole_result_is_fetched(demo_dsn: str) -> None:
    conn = await asyncpg.connect(demo_dsn)
    try:
        async with conn.transaction(readonly=True):
            stmt = await conn.prepare("SELECT repeat('x', 10000) AS v FROM generate_series(1, 100000)")
            cursor = CountingCursor(await stmt.cursor())
            lease = await ResultBudget().admit()
            with pytest.raises(errors.ResultTooLarge):
                await fetch_rows(cursor, 100_000, limit=1_000_000, lease=lease, measured=[0], fixed_per_row=100,
                                 convert=lambda batch: [list(r) for r in batch],
                                 too_large=lambda: errors.ResultTooLarge("too large"))
    finally:
        await conn.close()
    # 1 MB holds about 100 of these 10 kB rows; the query has 100,000 and the cap allowed them all.
    assert 90 <= cursor.rows < 250 and cursor.batches >= 2


async def test_fetch_in_batches_keeps_the_row_cap_exact(demo_dsn: str) -> None:
    conn = await asyncpg.connect(demo_dsn)
    try:
        async with conn.transaction(readonly=True):
            for total, cap in ((10, 50), (50, 50), (51, 50), (500, 50), (100, 33)):
                stmt = await conn.prepare(f"SELECT g FROM generate_series(1, {total}) g")
                cursor = CountingCursor(await stmt.cursor())
                rows, truncated, _ = await fetch_rows(
                    cursor, cap, limit=10_000_000, lease=await ResultBudget().admit(), measured=[],
                    fixed_per_row=50, convert=lambda batch: [list(r) for r in batch],
                    too_large=lambda: errors.ResultTooLarge("too large"))
                assert [r[0] for r in rows] == list(range(1, min(total, cap) + 1))
                assert truncated is (total > cap)
                assert cursor.rows <= cap + 1
    finally:
        await conn.close()


async def test_too_large_result_over_http(demo_dsn: str) -> None:
    async with gateway(demo_dsn, max_result_bytes=1_000_000, max_rows=1000) as (http, state):
        response = await sql(http, "SELECT repeat('x', 10000) AS v FROM generate_series(1, 400)")
        assert response.status_code == 422 and response.json()["code"] == "result_too_large"
        assert state.target("demo").results.used == 0  # the failed query gave its bytes back


async def test_process_budget_sheds_new_queries_with_503_and_frees_after_the_response(demo_dsn: str) -> None:
    backpressure = BackpressureSettings(result_bytes_in_flight=1024 * 1024, result_wait_s=0)
    async with gateway(demo_dsn, backpressure=backpressure) as (http, state):
        results = state.target("demo").results
        held = await results.admit()
        held.charge(results.limit)  # another request's results fill the whole budget
        shed = await sql(http, "SELECT 1 AS one")
        held.release()
        served = await sql(http, "SELECT order_id FROM orders ORDER BY order_id LIMIT 200")
        gc.collect()
        assert results.used == 0  # the response was written: its rows no longer count
    assert shed.status_code == 503
    assert shed.json()["code"] == "overloaded" and shed.headers["retry-after"] == "1"
    assert served.status_code == 200 and served.json()["row_count"] == 200


async def test_a_running_query_that_would_overdraw_the_budget_answers_503(demo_dsn: str) -> None:
    backpressure = BackpressureSettings(result_bytes_in_flight=1024 * 1024, result_wait_s=0)
    async with gateway(demo_dsn, backpressure=backpressure, max_rows=1000) as (http, state):
        results = state.target("demo").results
        held = await results.admit()
        held.charge(results.limit - 50_000)  # room for a small answer, not for 400 kB
        small = await sql(http, "SELECT 1 AS one")
        big = await sql(http, "SELECT repeat('y', 1000) AS v FROM generate_series(1, 400)")
        assert results.used == held.bytes  # the refused query gave its bytes back
        held.release()
    assert small.status_code == 200
    assert big.status_code == 503 and big.json()["code"] == "overloaded"


async def test_a_new_query_waits_briefly_for_the_budget(demo_dsn: str) -> None:
    backpressure = BackpressureSettings(result_bytes_in_flight=1024 * 1024, result_wait_s=30)
    async with gateway(demo_dsn, backpressure=backpressure) as (http, state):
        results = state.target("demo").results
        held = await results.admit()
        held.charge(results.limit)
        request = asyncio.create_task(sql(http, "SELECT 1 AS one"))
        await asyncio.sleep(0.05)
        assert not request.done()  # waiting, not refused
        held.release()
        response = await request
    assert response.status_code == 200 and response.json()["rows"] == [[1]]


async def test_a_large_result_is_streamed_as_the_same_json(demo_dsn: str) -> None:
    query = "SELECT g, repeat(md5(g::text), 100) AS v, g * 1.5 AS x FROM generate_series(1, 700) g ORDER BY g"
    async with gateway(demo_dsn, max_rows=500) as (http, state):
        response = await sql(http, query)
        gc.collect()
        assert state.target("demo").results.used == 0  # freed once the streamed response was sent
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert "content-length" not in response.headers  # streamed: no whole copy of the body was built
    body = response.json()
    assert set(body) == {"database", "verdict", "columns", "rows", "row_count", "truncated", "timings", "request_id"}
    assert body["row_count"] == len(body["rows"]) == 500 and body["truncated"] is True
    assert body["rows"][0] == [1, "c4ca4238a0b923820dcc509a6f75849b" * 100, "1.5"]
    assert [r[0] for r in body["rows"]] == list(range(1, 501))
