"""Result memory counted where it is spent: the bytes the driver receives (before decoding), the decoded
values, and the response body while it is written; concurrent large results refused rather than held
beyond the process's budget. Against the real demo database."""

from __future__ import annotations

import asyncio
import gc

import asyncpg

from gateway import errors
from gateway.api.routes_sql import BODY_COPIES, _stream_json
from gateway.execute import run_query
from gateway.execute.budget import _size
from gateway.execute.wire import JSON_EXPANSION, PER_BYTE
from gateway.settings import BackpressureSettings
from tests.api.test_bounds import gateway, sql

# One JSON value of about 0.5 MB: every order as an object.
JSON_AGG = "SELECT json_agg(t) FROM (SELECT o.*, repeat(md5(o.order_id::text), 4) AS pad FROM orders o) t"


async def json_text_bytes(demo_dsn: str) -> int:
    conn = await asyncpg.connect(demo_dsn)
    try:
        return int(await conn.fetchval(f"SELECT octet_length(json_agg::text)::int FROM ({JSON_AGG}) q(json_agg)"))
    finally:
        await conn.close()


async def test_a_json_agg_is_charged_as_received_then_as_decoded_then_as_its_body(demo_dsn: str) -> None:
    wire_bytes = await json_text_bytes(demo_dsn)
    assert wire_bytes > 300_000
    async with gateway(demo_dsn) as (_, state):
        results = state.target("demo").results
        results.reset_peak()
        result = await run_query(state.target("demo"), JSON_AGG)
        lease = result.lease
        assert lease is not None and result.row_count == 1
        # While the one DataRow arrived, before anything was decoded: the bytes received, the text they
        # decode to and the JSON objects reserved ahead of the decode.
        assert results.peak >= (PER_BYTE + JSON_EXPANSION) * wire_bytes
        assert lease.peak == results.peak
        # Now only the decoded objects are held, measured as they are.
        decoded = _size(result.rows[0][0])
        assert lease.wire == 0 and lease.body == 0
        assert decoded <= lease.bytes == result.size_bytes == results.used < decoded + 10_000
        # The response body is charged while each chunk is written, and given back once it has been sent.
        head = {"database": "demo", "columns": [{"name": "json_agg", "type": "json"}]}
        chunks = _stream_json(head, result, {"row_count": 1})
        await anext(chunks)  # the head
        body = await anext(chunks)  # the one row: the whole JSON value
        assert len(body) > wire_bytes * 0.9
        assert lease.body == BODY_COPIES * len(body) and results.used == result.size_bytes + lease.body
        await anext(chunks)  # the tail: the row chunk has been sent
        assert lease.body == 0 and results.used == result.size_bytes
        await chunks.aclose()
        del result, lease, chunks
        gc.collect()
        assert results.used == 0


async def test_a_value_that_cannot_fit_is_refused_as_its_bytes_arrive(demo_dsn: str) -> None:
    wire_bytes = await json_text_bytes(demo_dsn)
    # The decoded value would fit (about 4x its text) but the budget cannot hold what it takes to decode it.
    async with gateway(demo_dsn, backpressure=BackpressureSettings(result_bytes_in_flight=4 * wire_bytes,
                                                                   result_wait_s=0)) as (http, state):
        results = state.target("demo").results
        response = await sql(http, JSON_AGG)
        assert response.status_code == 503 and response.json()["code"] == "overloaded"
        assert results.peak <= results.limit and results.used == 0
        # The connection the meter ended is replaced: the next query is served.
        small = await sql(http, "SELECT count(*) AS n FROM orders")
        assert small.status_code == 200
    async with gateway(demo_dsn, max_result_bytes=wire_bytes // 2) as (http, state):  # half of it received
        response = await sql(http, JSON_AGG)
        assert response.status_code == 422 and response.json()["code"] == "result_too_large"
        assert state.target("demo").results.used == 0


async def test_concurrent_large_results_are_refused_rather_than_held_beyond_the_budget(demo_dsn: str) -> None:
    wire_bytes = await json_text_bytes(demo_dsn)
    limit = 16 * wire_bytes  # room for two or three of these at once (about 6x their text while decoded)
    async with gateway(demo_dsn, backpressure=BackpressureSettings(result_bytes_in_flight=limit,
                                                                   result_wait_s=0)) as (_, state):
        target = state.target("demo")
        results = target.results
        results.reset_peak()
        outcomes = await asyncio.gather(*(run_query(target, JSON_AGG) for _ in range(8)), return_exceptions=True)
        served = [o for o in outcomes if not isinstance(o, BaseException)]
        refused = [o for o in outcomes if isinstance(o, BaseException)]
        assert all(isinstance(o, errors.Overloaded) for o in refused), refused
        assert served and refused  # the first is always served; eight never fit at once
        assert results.peak <= limit  # what was received, decoded and kept never went beyond the budget
        assert results.used == sum(r.size_bytes for r in served)  # the refused gave back all they took


async def test_a_small_answer_counts_its_body_until_it_has_been_sent(demo_dsn: str) -> None:
    async with gateway(demo_dsn) as (http, state):
        results = state.target("demo").results
        results.reset_peak()
        response = await sql(http, "SELECT order_id FROM orders ORDER BY order_id LIMIT 200")
        assert response.status_code == 200 and "content-length" in response.headers  # not streamed
        rows_bytes = 200 * (64 + 40)  # the run path's fixed size of a row of one int4
        assert results.peak >= rows_bytes + len(response.content)
        gc.collect()
        assert results.used == 0
