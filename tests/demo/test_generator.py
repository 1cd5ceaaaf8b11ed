"""The demo database: deterministic, documented, consistent, and readable only by its reader role."""

from __future__ import annotations

import doctest
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import asyncpg
import pytest

import gateway.demo.generator as generator
from gateway.demo.generator import READER_ROLE, ensure_demo_database

if TYPE_CHECKING:
    from tests.conftest import PgServer

TABLES = {"regions", "employees", "customers", "categories", "products", "orders", "order_items", "payments",
          "events"}
ROW_COUNTS = {
    "regions": (7, 7), "categories": (10, 10), "employees": (50, 80), "customers": (2000, 2000),
    "products": (200, 200), "orders": (20000, 20000), "order_items": (45000, 60000),
    "payments": (19000, 23000), "events": (27000, 33000),
}
FOREIGN_KEYS = {
    ("employees", "manager_id", "employees"), ("employees", "region_id", "regions"),
    ("customers", "region_id", "regions"), ("customers", "account_manager_id", "employees"),
    ("products", "category_id", "categories"), ("orders", "customer_id", "customers"),
    ("orders", "sales_rep_id", "employees"), ("order_items", "order_id", "orders"),
    ("order_items", "product_id", "products"), ("payments", "order_id", "orders"),
    ("events", "customer_id", "customers"),
}
COPY = "nl2sql_test_demo_copy"


async def table_checksums(dsn: str) -> dict[str, str]:
    """md5 over every row of every table, in primary-key order."""
    conn = await asyncpg.connect(dsn)
    try:
        tables = await conn.fetch(
            """
            SELECT c.relname, string_agg(quote_ident(a.attname), ', ' ORDER BY k.ord) AS pk
            FROM pg_class c
            JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
            CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
            WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
            GROUP BY c.relname
            """
        )
        return {
            t["relname"]: await conn.fetchval(
                f"SELECT md5(string_agg(t::text, E'\\n' ORDER BY {t['pk']})) FROM {t['relname']} t"
            )
            for t in tables
        }
    finally:
        await conn.close()


async def database_oid(admin_dsn: str, database: str) -> int:
    conn = await asyncpg.connect(admin_dsn)
    try:
        return await conn.fetchval("SELECT oid FROM pg_database WHERE datname = $1", database)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
async def second_build(pg: PgServer) -> AsyncIterator[str]:
    """A second demo database built independently of the session's one."""
    await ensure_demo_database(pg.admin_dsn, database=COPY)
    yield pg.dsn(COPY)
    admin = await asyncpg.connect(pg.admin_dsn)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{COPY}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def admin(demo_admin_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(demo_admin_dsn)
    yield conn
    await conn.close()


async def test_two_builds_hold_identical_data(demo_admin_dsn: str, second_build: str) -> None:
    first, second = await table_checksums(demo_admin_dsn), await table_checksums(second_build)
    assert set(first) == TABLES
    assert first == second


async def test_row_counts_are_in_the_expected_ranges(admin: asyncpg.Connection) -> None:
    for table, (low, high) in ROW_COUNTS.items():
        count = await admin.fetchval(f"SELECT count(*) FROM {table}")
        assert low <= count <= high, table


async def test_every_table_and_column_is_documented(admin: asyncpg.Connection) -> None:
    undocumented = await admin.fetch(
        """
        SELECT c.relname, a.attname
        FROM pg_class c
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
          AND (coalesce(obj_description(c.oid, 'pg_class'), '') = ''
               OR coalesce(col_description(c.oid, a.attnum), '') = '')
        """
    )
    assert [tuple(row) for row in undocumented] == []


async def test_foreign_keys_are_declared_and_validated(admin: asyncpg.Connection) -> None:
    rows = await admin.fetch(
        """
        SELECT c.conrelid::regclass::text AS child, a.attname AS column,
               c.confrelid::regclass::text AS parent, c.convalidated
        FROM pg_constraint c
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
        WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
        """
    )
    assert {(r["child"], r["column"], r["parent"]) for r in rows} == FOREIGN_KEYS
    assert all(r["convalidated"] for r in rows)


# Each query counts violations. BI questions on the demo must have sensible answers, so any of these would
# be a bug in the generator.
CONSISTENCY = {
    "order total = lines after discount + shipping": """
        SELECT count(*) FROM orders o
        WHERE total_amount <> shipping_fee
            + (SELECT round(sum(quantity * unit_price * (1 - discount_pct)), 2)
               FROM order_items i WHERE i.order_id = o.order_id)""",
    "no order before the customer signed up": """
        SELECT count(*) FROM orders o JOIN customers c USING (customer_id)
        WHERE o.ordered_at::date < c.signup_date""",
    "no order without lines": """
        SELECT count(*) FROM orders o
        WHERE NOT EXISTS (SELECT FROM order_items i WHERE i.order_id = o.order_id)""",
    "cancelled and pending orders are never charged": """
        SELECT count(*) FROM payments p JOIN orders o USING (order_id)
        WHERE p.status = 'captured' AND o.status IN ('cancelled', 'pending')""",
    "every shipped, delivered or returned order has one captured payment": """
        SELECT count(*) FROM orders o
        WHERE status IN ('shipped', 'delivered', 'returned')
          AND (SELECT count(*) FROM payments p
               WHERE p.order_id = o.order_id AND p.status = 'captured') <> 1""",
    "a refund exactly for each returned order": """
        SELECT count(*) FROM orders o
        WHERE (o.status = 'returned')
           <> EXISTS (SELECT FROM payments p WHERE p.order_id = o.order_id AND p.status = 'refunded')""",
    "shipping and delivery follow the order, in the past": """
        SELECT count(*) FROM orders
        WHERE shipped_at <= ordered_at OR delivered_at <= shipped_at
           OR greatest(shipped_at, delivered_at) > timestamp '2025-01-01'
           OR (status IN ('delivered', 'returned')) <> (delivered_at IS NOT NULL)""",
    "no product twice in one order": """
        SELECT count(*) FROM (SELECT FROM order_items GROUP BY order_id, product_id HAVING count(*) > 1) d""",
    "order ids follow time": """
        SELECT count(*)
        FROM (SELECT ordered_at < lag(ordered_at) OVER (ORDER BY order_id) AS back FROM orders) s
        WHERE back""",
    "events of logged-in customers come after their signup": """
        SELECT count(*) FROM events e JOIN customers c USING (customer_id)
        WHERE e.occurred_at::date < c.signup_date""",
}


async def test_the_data_tells_a_consistent_business_story(admin: asyncpg.Connection) -> None:
    violations = {name: n for name, sql in CONSISTENCY.items() if (n := await admin.fetchval(sql)) != 0}
    assert violations == {}


async def test_the_schema_has_the_shapes_bi_questions_need(admin: asyncpg.Connection) -> None:
    hierarchy_depth = await admin.fetchval(
        """
        WITH RECURSIVE chain AS (
            SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL
            UNION ALL
            SELECT e.employee_id, c.depth + 1 FROM employees e JOIN chain c ON e.manager_id = c.employee_id
        )
        SELECT max(depth) FROM chain
        """
    )
    assert hierarchy_depth == 4
    assert await admin.fetchval("SELECT count(*) FROM employees WHERE manager_id IS NULL") == 1
    statuses = await admin.fetchval("SELECT array_agg(DISTINCT status ORDER BY status) FROM orders")
    assert statuses == ["cancelled", "delivered", "pending", "processing", "returned", "shipped"]
    span = await admin.fetchrow("SELECT min(ordered_at)::date AS first, max(ordered_at)::date AS last "
                                "FROM orders")
    assert (span["first"].year, span["last"].isoformat()) == (2023, "2024-12-31")
    assert await admin.fetchval("SELECT count(*) FROM customers c WHERE NOT EXISTS "
                                "(SELECT FROM orders o WHERE o.customer_id = c.customer_id)") > 0
    nested = await admin.fetchval(
        "SELECT count(DISTINCT payload #>> '{device,os}') FROM events WHERE payload ? 'device'"
    )
    assert nested >= 4
    email_campaigns = """SELECT count(*) FROM events WHERE payload @> '{"utm": {"medium": "email"}}'"""
    assert await admin.fetchval(email_campaigns) > 0
    assert await admin.fetchval("SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'") == "pg_trgm"


async def test_the_reader_role_can_read(demo_dsn: str) -> None:
    assert f"//{READER_ROLE}" in demo_dsn
    conn = await asyncpg.connect(demo_dsn)
    try:
        assert await conn.fetchval("SELECT current_user") == READER_ROLE
        assert await conn.fetchval("SELECT count(*) FROM orders") == 20000
        assert await conn.fetchval("SELECT similarity('Sonora Earbuds', 'sonora earbud')") > 0.5
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("statement", "sqlstate_when_read_write"),
    [
        ("INSERT INTO regions VALUES (99, 'XX', 'Nowhere')", "42501"),
        ("UPDATE orders SET status = 'cancelled' WHERE order_id = 1", "42501"),
        ("DELETE FROM payments", "42501"),
        ("TRUNCATE events", "42501"),
        ("CREATE TABLE public.scratch (x int)", "42501"),
        ("CREATE TEMP TABLE scratch (x int)", "42501"),
    ],
)
async def test_the_reader_role_cannot_write(
    demo_dsn: str, demo_admin_dsn: str, statement: str, sqlstate_when_read_write: str
) -> None:
    conn = await asyncpg.connect(demo_dsn)
    try:
        # Layer 1: the role's sessions start read-only.
        with pytest.raises(asyncpg.PostgresError) as read_only:
            await conn.execute(statement)
        assert read_only.value.sqlstate == "25006"
        # Layer 2: a session that switches that off still lacks the privilege.
        await conn.execute("SET default_transaction_read_only = off")
        with pytest.raises(asyncpg.PostgresError) as no_privilege:
            await conn.execute(statement)
        assert no_privilege.value.sqlstate == sqlstate_when_read_write
    finally:
        await conn.close()
    admin = await asyncpg.connect(demo_admin_dsn)  # and nothing changed
    try:
        assert await admin.fetchval("SELECT count(*) FROM regions") == 7
        assert await admin.fetchval("SELECT count(*) FROM payments") > 0
    finally:
        await admin.close()


async def test_an_up_to_date_database_is_reused(pg: PgServer, demo_dsn: str) -> None:
    database = urlsplit(demo_dsn).path.lstrip("/")
    before = await database_oid(pg.admin_dsn, database)
    password = urlsplit(demo_dsn).password
    assert await ensure_demo_database(pg.admin_dsn, database=database, reader_password=password) == demo_dsn
    assert await database_oid(pg.admin_dsn, database) == before


async def test_a_stale_database_is_rebuilt(pg: PgServer, second_build: str) -> None:
    before = await database_oid(pg.admin_dsn, COPY)
    admin = await asyncpg.connect(pg.admin_dsn)
    try:
        stale = "nl2sql-gateway demo database, generator 0-old"
        await admin.execute(f"COMMENT ON DATABASE \"{COPY}\" IS '{stale}'")
        # A scratch database left by an interrupted build must not get in the way either.
        await admin.execute(f'CREATE DATABASE "{COPY}__building"')
    finally:
        await admin.close()
    await ensure_demo_database(pg.admin_dsn, database=COPY)
    assert await database_oid(pg.admin_dsn, COPY) != before
    assert await database_oid(pg.admin_dsn, f"{COPY}__building") is None
    conn = await asyncpg.connect(second_build)
    try:
        assert await conn.fetchval("SELECT count(*) FROM orders") == 20000
    finally:
        await conn.close()


def test_docstring_examples() -> None:
    assert doctest.testmod(generator).failed == 0
