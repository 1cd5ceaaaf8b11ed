"""POST /v1/sql and friends on the real demo database."""

from __future__ import annotations

import httpx


async def sql(client: httpx.AsyncClient, text: str, **extra: object) -> httpx.Response:
    return await client.post("/v1/sql", json={"database": "demo", "sql": text, **extra})


async def test_runs_a_bi_query_with_columns_types_and_timings(client: httpx.AsyncClient) -> None:
    response = await sql(client, """
        SELECT r.name AS region, count(*) AS orders, sum(o.total_amount) AS revenue
        FROM orders o JOIN customers c ON c.customer_id = o.customer_id
        JOIN regions r ON r.region_id = c.region_id
        WHERE o.status <> 'cancelled' GROUP BY r.name ORDER BY orders DESC""")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["verdict"]["allowed"] is True
    assert [c["name"] for c in body["columns"]] == ["region", "orders", "revenue"]
    assert [c["type"] for c in body["columns"]][:2] == ["text", "int8"]
    assert body["row_count"] == len(body["rows"]) > 1
    assert body["truncated"] is False
    counts = [row[1] for row in body["rows"]]
    assert counts == sorted(counts, reverse=True)
    assert all(isinstance(row[2], str) for row in body["rows"])  # numeric stays an exact decimal string
    assert {"check_ms", "db_ms", "total_ms"} <= set(body["timings"])
    assert response.headers["x-request-id"] == body["request_id"]


async def test_row_cap_sets_truncated_without_changing_the_query(client: httpx.AsyncClient) -> None:
    capped = (await sql(client, "SELECT customer_id FROM customers ORDER BY customer_id", max_rows=7)).json()
    assert capped["row_count"] == 7 and capped["truncated"] is True
    assert [r[0] for r in capped["rows"]] == sorted(r[0] for r in capped["rows"])
    exact = (await sql(client, "SELECT customer_id FROM customers ORDER BY customer_id LIMIT 7", max_rows=7)).json()
    assert exact["truncated"] is False and exact["rows"] == capped["rows"]
    # The database's own max_rows (500 here) caps a larger request.
    big = (await sql(client, "SELECT order_id FROM orders", max_rows=100000)).json()
    assert big["row_count"] == 500 and big["truncated"] is True


async def test_values_are_serialized_faithfully(client: httpx.AsyncClient) -> None:
    body = (await sql(client, """
        SELECT 12345678901234567890.123456789::numeric AS n, 'NaN'::float8 AS nan, 1.5::float8 AS f,
               DATE '2024-02-29' AS d, TIMESTAMPTZ '2024-01-02 03:04:05.5+00' AS ts,
               INTERVAL '1 year 2 months 3 days 04:05:06.5' AS iv, INTERVAL '1 month' AS month,
               '6f1c2a3e-0000-4000-8000-000000000001'::uuid AS u, '{"a": [1, 2.5, null]}'::jsonb AS j,
               ARRAY[1, 2, NULL]::int[] AS arr, '\\xdeadbeef'::bytea AS b, NULL::text AS nothing,
               9223372036854775807::int8 AS big, true AS flag""")).json()
    row = dict(zip([c["name"] for c in body["columns"]], body["rows"][0], strict=True))
    assert row["n"] == "12345678901234567890.123456789"
    assert row["nan"] == "NaN" and row["f"] == 1.5  # Postgres's own spelling (docs/values.md)
    assert row["d"] == "2024-02-29"
    assert row["ts"].startswith("2024-01-02T03:04:05.5") and row["ts"].endswith("+00:00")
    assert row["iv"] == "P1Y2M3DT4H5M6.5S"
    assert row["month"] == "P1M"  # never 30 days
    assert row["u"] == "6f1c2a3e-0000-4000-8000-000000000001"
    assert row["j"] == {"a": [1, 2.5, None]}
    assert row["arr"] == [1, 2, None]
    assert row["b"] == "\\xdeadbeef"
    assert row["nothing"] is None and row["big"] == 9223372036854775807 and row["flag"] is True


async def test_bi_features_run_end_to_end(client: httpx.AsyncClient) -> None:
    queries = [
        "WITH RECURSIVE chain AS (SELECT employee_id, manager_id, 1 AS depth FROM employees WHERE manager_id IS NULL"
        " UNION ALL SELECT e.employee_id, e.manager_id, c.depth + 1 FROM employees e JOIN chain c"
        " ON e.manager_id = c.employee_id WHERE c.depth < 10) SELECT depth, count(*) FROM chain GROUP BY depth",
        "SELECT customer_id, order_id, rank() OVER (PARTITION BY customer_id ORDER BY ordered_at) FROM orders LIMIT 5",
        "SELECT count(*) FILTER (WHERE status = 'cancelled'), count(*) FROM orders",
        "SELECT status, count(*) FROM orders GROUP BY GROUPING SETS ((status), ())",
        "SELECT DISTINCT ON (customer_id) customer_id, ordered_at FROM orders ORDER BY customer_id, ordered_at DESC"
        " LIMIT 3",
        "SELECT c.customer_id, last.ordered_at FROM customers c CROSS JOIN LATERAL (SELECT ordered_at FROM orders o"
        " WHERE o.customer_id = c.customer_id ORDER BY ordered_at DESC LIMIT 1) last LIMIT 3",
        "SELECT payload->>'page' AS page, count(*) FROM events WHERE payload ? 'page' GROUP BY 1 LIMIT 5",
        "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, name)",
        "TABLE regions",
        "SELECT region_id FROM regions UNION SELECT region_id FROM customers",
        "EXPLAIN SELECT * FROM orders WHERE customer_id = 1",
        "EXPLAIN (FORMAT JSON) SELECT count(*) FROM orders",
    ]
    for text in queries:
        response = await sql(client, text)
        assert response.status_code == 200, (text, response.text)


async def test_the_read_only_transaction_holds_even_for_a_write_the_checker_never_sees(demo_dsn: str) -> None:
    """Defense in depth: run_query itself refuses writes (the route never gets there; see test_problems)."""
    from gateway import errors
    from gateway.execute import Targets
    from gateway.execute.run import run_query
    from gateway.settings import DatabaseSettings, Settings

    targets = await Targets.open(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}))
    try:
        target = targets.by_name["demo"]
        try:
            await run_query(target, "UPDATE regions SET name = name RETURNING 1")
        except errors.QueryError as exc:
            assert exc.extra["sqlstate"] in {"25006", "42501"}
        else:
            raise AssertionError("a write ran")
    finally:
        await targets.close()


async def test_session_state_never_leaks_to_the_next_request(demo_dsn: str) -> None:
    """A pooled connection is reset on release: settings, advisory locks, cursors do not carry over."""
    from gateway.execute import Targets
    from gateway.execute.run import run_query
    from gateway.settings import DatabaseSettings, Settings

    settings = Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn, pool_min_size=1, pool_max_size=1)})
    targets = await Targets.open(settings)
    try:
        target = targets.by_name["demo"]
        # Bypass the checker on purpose: these would be blocked at the API.
        await run_query(target, "SELECT set_config('application_name', 'leaked', false)")
        await run_query(target, "SELECT pg_advisory_lock(4242)")
        after = await run_query(target, "SELECT current_setting('application_name'), "
                                "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())")
        assert after.rows[0][0] != "leaked"
        assert after.rows[0][1] == 0
    finally:
        await targets.close()


async def test_databases_schema_and_health(client: httpx.AsyncClient) -> None:
    listed = (await client.get("/v1/databases")).json()["databases"]
    assert {d["name"] for d in listed} == {"demo", "down"}
    schema = (await client.get("/v1/databases/demo/schema")).json()
    orders = next(t for t in schema["tables"] if t["name"] == "orders")
    assert orders["primary_key"] == ["order_id"]
    assert any(fk["ref_table"] == "customers" for fk in orders["foreign_keys"])
    assert orders["comment"] and all(c["comment"] for c in orders["columns"])
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 503  # "down" does not answer
    assert ready.json()["databases"]["demo"] == "ok"
    assert ready.json()["databases"]["down"].startswith("unavailable")


async def test_metrics_after_traffic(client: httpx.AsyncClient) -> None:
    await sql(client, "SELECT 1")
    await sql(client, "SELECT pg_sleep(1)")
    text = (await client.get("/metrics")).text
    assert 'nl2sql_requests_total{endpoint="/v1/sql",status="200"}' in text
    assert 'nl2sql_safety_blocks_total{code="function_blocked"}' in text
    assert "nl2sql_request_seconds_bucket" in text and 'nl2sql_db_seconds_count{database="demo"}' in text
    assert 'nl2sql_pool_size{database="demo"}' in text and 'nl2sql_pool_in_use{database="demo"}' in text


async def test_schema_pages_with_a_table_list_first(client: httpx.AsyncClient) -> None:
    listed = (await client.get("/v1/databases/demo/schema", params={"detail": "tables", "limit": 3})).json()
    assert listed["detail"] == "tables" and len(listed["tables"]) == 3 and listed["next_offset"] == 3
    assert all(set(t) == {"schema", "name", "kind", "comment", "estimated_rows"} for t in listed["tables"])
    rest = (await client.get("/v1/databases/demo/schema",
                             params={"detail": "tables", "limit": 1000, "offset": 3})).json()
    assert rest["next_offset"] is None
    names = [t["name"] for t in listed["tables"] + rest["tables"]]
    assert len(names) == len(set(names)) == listed["total"]
    chosen = (await client.get("/v1/databases/demo/schema", params={"tables": f"{names[0]},{names[1]}"})).json()
    assert [t["name"] for t in chosen["tables"]] == names[:2] and all(t["columns"] for t in chosen["tables"])
    bad = await client.get("/v1/databases/demo/schema", params={"limit": 0})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
