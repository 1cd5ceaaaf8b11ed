"""Every problem code a client or an outage can cause, reached through HTTP; never a 500 or a hang."""

from __future__ import annotations

import httpx
import pytest

from gateway import errors

PROBLEM = "application/problem+json"


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["code"] == code and body["status"] == status
    assert body["type"].endswith("/" + code) and body["title"] and body["detail"]
    assert body["request_id"] == response.headers["x-request-id"]
    return body


async def test_malformed_json_body(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/sql", content=b'{"database": "demo", "sql": ', headers={"content-type": "application/json"})
    assert_problem(response, 400, "malformed_body")


@pytest.mark.parametrize("payload", [
    {"database": "demo"},
    {"database": "demo", "sql": ""},
    {"database": "demo", "sql": 42},
    {"database": "demo", "sql": "SELECT 1", "max_rows": 0},
    {"database": "demo", "sql": "SELECT 1", "surprise": True},
    [],
])
async def test_body_that_does_not_match_the_schema(client: httpx.AsyncClient, payload: object) -> None:
    body = assert_problem(await client.post("/v1/sql", json=payload), 422, "invalid_request")
    assert body["errors"]


async def test_body_too_large(client: httpx.AsyncClient) -> None:
    huge = "SELECT 1 -- " + "x" * 1_100_000
    assert_problem(await client.post("/v1/sql", json={"database": "demo", "sql": huge}), 413, "payload_too_large")


async def test_sql_too_large(client: httpx.AsyncClient) -> None:
    text = "SELECT 1" + " " * 100_001
    body = assert_problem(await client.post("/v1/sql", json={"database": "demo", "sql": text}), 413, "sql_too_large")
    assert "max_sql_bytes" in str(body["detail"])


async def test_unknown_database(client: httpx.AsyncClient) -> None:
    body = assert_problem(await client.post("/v1/sql", json={"database": "nope", "sql": "SELECT 1"}), 404,
                          "unknown_database")
    assert "demo" in str(body["detail"])
    assert_problem(await client.get("/v1/databases/nope/schema"), 404, "unknown_database")


@pytest.mark.parametrize(("text", "code"), [
    ("DELETE FROM orders", "write_statement"),
    ("SELECT 1; DROP TABLE orders", "multiple_statements"),
    ("SELECT pg_sleep(5)", "function_blocked"),
    ("SELECT * FROM orders FOR UPDATE", "locking_clause"),
    ("WITH gone AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM gone", "data_modifying_cte"),
    ("SELEC 1", "parse_error"),
])
async def test_blocked_sql_lists_findings(client: httpx.AsyncClient, text: str, code: str) -> None:
    body = assert_problem(await client.post("/v1/sql", json={"database": "demo", "sql": text}), 422, "sql_blocked")
    assert code in body["codes"]  # type: ignore[operator]
    assert all({"code", "message"} <= set(f) for f in body["findings"])  # type: ignore[union-attr]


async def test_database_error_keeps_sqlstate_and_position(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/sql", json={"database": "demo", "sql": "SELECT no_such_column FROM orders"})
    body = assert_problem(response, 422, "query_error")
    assert body["sqlstate"] == "42703"
    assert body["position"] == 8  # 1-based, as Postgres reports it
    assert "no_such_column" in str(body["message"])


async def test_statement_timeout_with_a_real_slow_query(client: httpx.AsyncClient) -> None:
    # Allowed SQL that takes far longer than the 1.5 s statement_timeout (minutes): the md5 of a 90 kB value
    # for each of a million rows. Every size and row bound holds, and the planner costs it low.
    slow = "SELECT count(*) FROM generate_series(1, 1000000) AS n(i) WHERE md5(repeat('abcdefghij', 9000) || i) = ''"
    body = assert_problem(await client.post("/v1/sql", json={"database": "demo", "sql": slow}), 504,
                          "statement_timeout")
    assert body["sqlstate"] == "57014" and "statement_timeout_ms" in str(body["detail"])
    # The connection went back to the pool healthy.
    ok = await client.post("/v1/sql", json={"database": "demo", "sql": "SELECT 1"})
    assert ok.status_code == 200


async def test_database_unavailable(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/sql", json={"database": "down", "sql": "SELECT 1"})
    assert_problem(response, 503, "database_unavailable")
    assert response.headers["retry-after"]
    assert_problem(await client.get("/v1/databases/down/schema"), 503, "database_unavailable")


async def test_unknown_route_and_method(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/v1/nothing-here"), 404, "not_found")
    assert_problem(await client.get("/v1/sql"), 405, "method_not_allowed")


async def test_bind_parameters_are_a_client_error(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/sql", json={"database": "demo", "sql": "SELECT $1::int"})
    assert response.status_code in {422}, response.text
    assert response.json()["code"] in {"query_error", "sql_blocked"}


async def test_check_endpoint_returns_verdicts_not_errors(client: httpx.AsyncClient) -> None:
    allowed = (await client.post("/v1/check", json={"sql": "SELECT 1"})).json()["verdict"]
    assert allowed["allowed"] is True and allowed["statement_kind"] == "select"
    blocked = (await client.post("/v1/check", json={"sql": "SELECT pg_read_file('/etc/passwd')"})).json()["verdict"]
    assert blocked["allowed"] is False and blocked["codes"] == ["function_blocked"]
    assert "pg_read_file" in blocked["findings"][0]["message"]
    unknown = await client.post("/v1/check", json={"sql": "SELECT 1", "database": "nope"})
    assert_problem(unknown, 404, "unknown_database")


def test_every_error_class_has_a_distinct_code_and_a_client_status() -> None:
    classes = errors.all_error_classes()
    codes = [c.code for c in classes]
    assert len(codes) == len(set(codes))
    assert all(400 <= c.status < 600 for c in classes)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
async def test_non_json_body(client: httpx.AsyncClient, content_type: str) -> None:
    response = await client.post("/v1/sql", content=b'{"database": "demo", "sql": "SELECT 1"}',
                                 headers={"content-type": content_type})
    assert_problem(response, 415, "unsupported_media_type")


async def test_result_too_large_for_memory(client: httpx.AsyncClient) -> None:
    # 40 rows under max_rows of 32 kB each (each within the static size bound, value_too_large), 1.3 MB of
    # text against a 1 MB max_result_bytes.
    response = await client.post("/v1/sql", json={
        "database": "demo", "sql": "SELECT repeat(md5(first_name), 1000) AS wide FROM customers LIMIT 40"})
    body = assert_problem(response, 422, "result_too_large")
    assert "max_result_bytes" in str(body["detail"])


async def test_query_cancelled_by_the_database(demo_dsn: str, demo_admin_dsn: str) -> None:
    from gateway.api.app import create_app
    from tests.api.conftest import demo_settings

    # statement_timeout far beyond the polling below (the module's client has 1.5 s, which a loaded machine
    # may spend before the cancel lands): only the cancel can end this query.
    app = create_app(demo_settings(demo_dsn, statement_timeout_ms=120_000))
    slow = ("SELECT count(*) AS cancel_me FROM generate_series(1, 1000000) AS n(i) "
            "WHERE md5(repeat('abcdefghij', 9000) || i) = ''")
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        response = await _cancelled(client, demo_admin_dsn, slow)
    body = assert_problem(response, 504, "query_canceled")
    assert body["sqlstate"] == "57014"


async def _cancelled(client: httpx.AsyncClient, demo_admin_dsn: str, slow: str) -> httpx.Response:
    """The answer to ``slow`` once pg_cancel_backend ended it (polled for it, bounded)."""
    import asyncio

    import asyncpg

    request = asyncio.create_task(client.post("/v1/sql", json={"database": "demo", "sql": slow}))
    admin = await asyncpg.connect(demo_admin_dsn)
    try:
        for _ in range(3000):
            cancelled = await admin.fetchval(
                "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
                "WHERE query LIKE 'SELECT count(*) AS cancel_me%' AND pid <> pg_backend_pid() AND state = 'active' "
                # A backend between protocol messages (after Parse, before Execute) ignores a cancel.
                "AND clock_timestamp() - query_start > interval '100 milliseconds'")
            if cancelled:
                break
            await asyncio.sleep(0.02)
    finally:
        await admin.close()
    return await request
