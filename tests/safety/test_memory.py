"""The worst statements the static size analysis allows, one per class, run on the demo database: no backend
grows above 100 MB.

``statement_timeout`` bounds time, not memory; what bounds memory is that these are the largest values and row
counts the check lets through (each statement is first checked to be allowed with the default policy). Each
statement runs on a fresh connection, so the backend's peak resident size (``VmHWM`` in /proc) is that
statement's. The server must run on this machine (the embedded one); an external server is skipped.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from gateway.safety import check

LIMIT_BYTES = 100 * 1024 * 1024

# (class, statement): the largest each class allows with default limits.
WORST_ALLOWED: tuple[tuple[str, str], ...] = (
    ("repeat at max_value_bytes", "SELECT length(repeat('x', 100000))"),
    ("replace of a large value", "SELECT length(replace(repeat('a', 49000), 'a', 'b'))"),
    ("regexp_replace, global", "SELECT length(regexp_replace(repeat('a', 30000), 'a', 'b', 'g'))"),
    ("lpad with a capped table count",
     "SELECT length(lpad('', LEAST((SELECT count(*)::int FROM order_items) * 15000, 100000), 'ab'))"),
    ("array_fill with a capped table count",
     "SELECT cardinality(array_fill(1, ARRAY[LEAST((SELECT count(*)::int FROM order_items), 2000)]))"),
    ("numeric power", "SELECT length((9.9::numeric ^ 2400)::text)"),
    ("string_agg of a constant over the largest table",
     "SELECT length(string_agg(repeat('x', 500), '')) FROM order_items"),
    ("string_agg over a join of two tables",
     "SELECT length(string_agg(repeat('x', 480) || p.sku, '')) FROM order_items oi JOIN products p "
     "ON p.product_id = oi.product_id"),
    ("json_agg of whole rows", "SELECT length(json_agg(e)::text) FROM events e"),
    ("array_agg over a series", "SELECT cardinality(array_agg(repeat('x', 100))) FROM generate_series(1, 900)"),
    ("repeat of a whole-table aggregate",
     "SELECT length(repeat((SELECT string_agg(status, ',') FROM orders), 25))"),
    ("rows of joined series", "SELECT count(*) FROM generate_series(1, 1000) a, generate_series(1, 1000) b"),
    ("counted recursion", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 999990) "
     "SELECT sum(i) FROM n"),
    ("recursion growing a string by a constant",
     "WITH RECURSIVE r(n, v) AS (SELECT 1, ''::text UNION ALL SELECT n + 1, v || repeat('x', 9) FROM r "
     "WHERE n < 10000) SELECT max(length(v)) FROM r"),
)


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize(("name", "sql"), WORST_ALLOWED, ids=[n for n, _ in WORST_ALLOWED])
async def test_worst_allowed_statement_stays_under_100_mb(name: str, sql: str, demo_admin_dsn: str) -> None:
    verdict = check(sql)
    assert verdict.allowed, verdict.findings  # the worst the check allows, not something it refuses
    conn = await asyncpg.connect(demo_admin_dsn)
    try:
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        if not Path(f"/proc/{pid}/status").exists():
            pytest.skip("the server does not run on this machine")
        async with conn.transaction(readonly=True):
            await conn.execute("SET LOCAL statement_timeout = '60s'")
            await conn.fetch(sql)
        peak = _peak_rss(pid)
    finally:
        await conn.close()
    assert peak < LIMIT_BYTES, f"{name}: backend peaked at {peak / 1e6:.1f} MB"


async def test_refused_statements_would_exceed_the_bound(demo_admin_dsn: str) -> None:
    # The measurement can fail: a statement one step past the analysis's limits, which check() refuses, drives
    # the backend above 100 MB.
    sql = "SELECT length(string_agg(repeat('x', 3000), '')) FROM order_items"
    assert check(sql).codes == ["value_too_large"]
    conn = await asyncpg.connect(demo_admin_dsn)
    try:
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        if not Path(f"/proc/{pid}/status").exists():
            pytest.skip("the server does not run on this machine")
        async with conn.transaction(readonly=True):
            await conn.fetch(sql)
        assert _peak_rss(pid) > LIMIT_BYTES
    finally:
        await conn.close()
