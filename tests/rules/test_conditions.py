"""Required conditions and result checks, read on the syntax tree."""

from __future__ import annotations

import pytest

from gateway.execute import Column
from gateway.rules import RequiredCondition, ResultCheck, RuleSet, missing_conditions, rule_findings

EXCLUDE_CANCELLED = RequiredCondition("exclude_cancelled", "orders", "status <> 'cancelled'",
                                      "queries on orders must exclude cancelled orders")

HONOURED = [
    "SELECT count(*) FROM orders WHERE status <> 'cancelled'",
    "SELECT count(*) FROM orders WHERE status != 'cancelled'",
    "SELECT count(*) FROM orders WHERE NOT status = 'cancelled'",
    "SELECT count(*) FROM orders WHERE NOT (status = 'cancelled')",
    "SELECT count(*) FROM orders WHERE 'cancelled' <> status",
    "SELECT count(*) FROM orders WHERE status IS DISTINCT FROM 'cancelled'",
    "SELECT count(*) FROM orders o WHERE o.status NOT IN ('cancelled', 'returned')",
    "SELECT count(*) FROM orders o WHERE o.status <> ALL (ARRAY['cancelled', 'returned'])",
    # positive filters whose values leave 'cancelled' out
    "SELECT count(*) FROM orders o WHERE o.status IN ('shipped', 'delivered')",
    "SELECT count(*) FROM orders o WHERE o.status = 'delivered'",
    "SELECT count(*) FROM orders o WHERE o.status = ANY (ARRAY['shipped'])",
    # alias, inside a larger AND, schema-qualified
    ("SELECT o.channel, sum(o.total_amount) FROM orders AS o WHERE o.ordered_at >= '2024-01-01' AND "
     "(o.status <> 'cancelled' AND o.total_amount > 0) GROUP BY o.channel"),
    "SELECT count(*) FROM public.orders WHERE status <> 'cancelled'",
    # in the table's own JOIN ... ON, inner or left
    "SELECT count(*) FROM customers c JOIN orders o ON o.customer_id = c.customer_id AND o.status <> 'cancelled'",
    ("SELECT c.customer_id, count(o.order_id) FROM customers c LEFT JOIN orders o "
     "ON o.customer_id = c.customer_id AND o.status <> 'cancelled' GROUP BY 1"),
    # subquery and CTE carrying their own filter
    "SELECT * FROM customers WHERE customer_id IN (SELECT customer_id FROM orders WHERE status <> 'cancelled')",
    "WITH live AS (SELECT * FROM orders WHERE status <> 'cancelled') SELECT count(*) FROM live",
    # a CTE or derived table that passes the column through, filtered where it is used
    "WITH o AS (SELECT * FROM orders) SELECT count(*) FROM o WHERE o.status <> 'cancelled'",
    "SELECT count(*) FROM (SELECT order_id, status FROM orders) x WHERE x.status <> 'cancelled'",
    # a CTE named like the table shadows it: the table itself is never read
    "WITH orders AS (SELECT 1 AS a) SELECT * FROM orders",
    "SELECT count(*) FROM customers",
]

VIOLATED = [
    "SELECT count(*) FROM orders",
    "SELECT count(*) FROM orders o WHERE o.status IN ('shipped', 'cancelled')",
    "SELECT count(*) FROM orders WHERE status <> 'cancelled' OR total_amount > 0",  # under OR: filters nothing
    "SELECT count(*) FROM orders WHERE status NOT LIKE 'cancel%'",  # not an equivalent predicate
    # the filter is on another table's column of the same name
    "SELECT count(*) FROM orders o JOIN payments p ON p.order_id = o.order_id WHERE p.status <> 'cancelled'",
    # subquery or CTE without the filter
    "SELECT * FROM customers WHERE customer_id IN (SELECT customer_id FROM orders)",
    "WITH o AS (SELECT * FROM orders) SELECT count(*) FROM o",
    # the CTE does not pass status through, so the outside cannot filter on it
    "WITH o AS (SELECT order_id FROM orders) SELECT count(*) FROM o",
    # one branch of a UNION is enough to break the rule
    "SELECT order_id FROM orders WHERE status <> 'cancelled' UNION ALL SELECT order_id FROM orders",
    # a LEFT JOIN's ON that filters the other side does not filter orders
    "SELECT count(*) FROM orders o LEFT JOIN customers c ON c.customer_id = o.customer_id AND o.status <> 'cancelled'",
]


@pytest.mark.parametrize("sql", HONOURED)
def test_condition_honoured(sql: str) -> None:
    assert missing_conditions(sql, [EXCLUDE_CANCELLED]) == []


@pytest.mark.parametrize("sql", VIOLATED)
def test_condition_violated(sql: str) -> None:
    assert missing_conditions(sql, [EXCLUDE_CANCELLED]) == [EXCLUDE_CANCELLED]


def test_boolean_and_null_conditions() -> None:
    active = RequiredCondition("active_only", "customers", "is_active", "")
    for sql in ("SELECT 1 FROM customers WHERE is_active", "SELECT 1 FROM customers c WHERE c.is_active = true",
                "SELECT 1 FROM customers WHERE is_active IS TRUE"):
        assert missing_conditions(sql, [active]) == [], sql
    assert missing_conditions("SELECT 1 FROM customers WHERE NOT is_active", [active]) == [active]
    shipped = RequiredCondition("shipped", "orders", "shipped_at IS NOT NULL AND status <> 'cancelled'", "")
    assert missing_conditions("SELECT 1 FROM orders WHERE status = 'delivered' AND shipped_at IS NOT NULL",
                              [shipped]) == []
    assert missing_conditions("SELECT 1 FROM orders WHERE status = 'delivered'", [shipped]) == [shipped]


def test_unparseable_sql_is_left_to_the_safety_check() -> None:
    assert missing_conditions("SELEC oops FROM", [EXCLUDE_CANCELLED]) == []


def test_rule_findings_names_the_rule_and_how_to_fix_it() -> None:
    rules = RuleSet("demo", required_conditions=[EXCLUDE_CANCELLED])
    (finding,) = rule_findings(rules, "SELECT sum(total_amount) FROM orders", [], [])
    assert finding.code == "rule_violation" and finding.detail["rule"] == "exclude_cancelled"
    assert "exclude cancelled" in finding.message and "status <> 'cancelled'" in finding.message
    assert rule_findings(rules, "SELECT sum(total_amount) FROM orders WHERE status <> 'cancelled'") == []


def test_result_checks_on_named_columns() -> None:
    rules = RuleSet("demo", result_checks=[ResultCheck("non_negative", "revenue", min=0, message="no negatives"),
                                           ResultCheck("has_name", "name", not_null=True)])
    columns = [Column("name", "text"), Column("revenue", "numeric")]
    assert rule_findings(rules, "SELECT 1", columns, [["a", "10.50"], ["b", "0"]]) == []
    found = rule_findings(rules, "SELECT 1", columns, [["a", "10.50"], [None, "-3.20"]])
    assert {f.detail["rule"] for f in found} == {"non_negative", "has_name"}
    assert any("-3.20" in f.message and "row 2" in f.message for f in found)
    # a result without the column is not checked
    assert rule_findings(rules, "SELECT 1", ["total"], [["-1"]]) == []
