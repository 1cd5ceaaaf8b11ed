"""The result checks on real results of the demo database: right answers of odd shapes stay unflagged, the
symptoms of wrong ones are found."""

from __future__ import annotations

import asyncpg
import pytest

from gateway.pipeline.sqlshape import shape_of_sql
from gateway.pipeline.validate import ResultView, check_result

CASES = [
    # right answers that look odd
    ("List the top 3 products with the highest number of units sold.",
     "SELECT p.name FROM order_items oi JOIN products p ON p.product_id = oi.product_id GROUP BY p.name "
     "ORDER BY sum(oi.quantity) DESC LIMIT 3", []),
    ("What was the revenue for each month, over orders placed from 2024-12-24 on?",
     "SELECT date_trunc('month', ordered_at), sum(total_amount) FROM orders WHERE ordered_at >= '2024-12-24' "
     "GROUP BY 1", []),
    ("List the countries of the customers in the Enterprise segment.",
     "SELECT country FROM customers WHERE segment = 'Enterprise'", []),
    ("List the discount code of each web order placed from 2024-12-30 on.",
     "SELECT discount_code FROM orders WHERE channel = 'web' AND ordered_at >= '2024-12-30'", []),
    ("What is the average number of line items per order?",
     "SELECT avg(n) FROM (SELECT order_id, count(*) AS n FROM order_items GROUP BY order_id) per_order", []),
    ("How many orders were placed through each sales channel?",
     "SELECT channel, count(*) FROM orders GROUP BY channel", []),
    # wrong answers and their symptoms
    ("How many orders were cancelled?", "SELECT count(*) FROM orders WHERE status = 'Cancelled'",
     ["empty_aggregate"]),
    ("What is the average value of orders paid with bitcoin?",
     "SELECT avg(o.total_amount) FROM orders o JOIN payments p ON p.order_id = o.order_id WHERE p.method = 'btc'",
     ["empty_aggregate"]),
    ("How many products are discontinued?", "SELECT product_id FROM products WHERE is_discontinued",
     ["count_mismatch"]),
    ("How many customers are there in each segment?", "SELECT count(*) FROM customers", ["grouping_mismatch"]),
    ("Which distinct brands sell audio products?",
     "SELECT p.brand FROM products p JOIN categories c ON c.category_id = p.category_id WHERE c.name = 'Audio'",
     ["duplicate_rows"]),
    ("List customers with their orders' discount codes.",
     "SELECT c.customer_id, o.discount_code FROM customers c LEFT JOIN orders o ON o.order_id = -c.customer_id "
     "WHERE c.customer_id < 5", ["null_heavy"]),
]


@pytest.mark.parametrize(("question", "sql", "expected"), CASES, ids=[c[0][:40] for c in CASES])
async def test_checks_on_demo_results(demo_dsn: str, question: str, sql: str, expected: list[str]) -> None:
    conn = await asyncpg.connect(demo_dsn)
    try:
        statement = await conn.prepare(sql)
        rows = [list(row) for row in await statement.fetch()]
        columns = [a.name for a in statement.get_attributes()]
    finally:
        await conn.close()
    found = [f.code for f in check_result(ResultView(question, columns, rows, False, shape_of_sql(sql)))]
    assert found == expected


def test_shapes_are_kept_per_sql_text_within_a_bound() -> None:
    from gateway.pipeline import sqlshape

    text = "SELECT region_id, count(*) FROM customers GROUP BY region_id -- shape cache test"
    first = shape_of_sql(text)
    assert first is not None and shape_of_sql(text) is first  # parsed once
    assert shape_of_sql(text + " ") == first and shape_of_sql(text + " ") is not first  # keyed by the exact text
    long_sql = "SELECT 1 AS x WHERE " + " AND ".join(["1 = 1"] * 3000)
    before = sqlshape._cached_shape.cache_info().currsize
    assert shape_of_sql(long_sql) is not None and shape_of_sql(long_sql) is not shape_of_sql(long_sql)
    assert sqlshape._cached_shape.cache_info().currsize == before  # long texts are not kept
    assert sqlshape._cached_shape.cache_info().maxsize == sqlshape.SHAPE_CACHE_ENTRIES
