"""Metric definitions enforced on generated SQL: a metric computed the wrong way is flagged
``metric_definition_mismatch`` and fixed by reflection, every one; correct answers are never flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml

from gateway.semantic.compile import MetricQuery, compile_query
from gateway.semantic.enforce import semantic_findings
from gateway.semantic.loading import load_model
from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import ask_settings, gateway, is_reflection, post_ask, script, sql

ROOT = Path(__file__).resolve().parents[2]
MODEL = load_model([ROOT / "semantic" / "demo.yaml"])[0]
QUESTIONS = yaml.safe_load((ROOT / "gateway" / "semantic" / "data" / "demo_metric_questions.yaml").read_text())

REVENUE_BY_REGION = ("SELECT r.name AS region, sum(o.total_amount) FILTER (WHERE o.status <> 'cancelled') AS revenue "
                     "FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
                     "JOIN regions r ON r.region_id = c.region_id GROUP BY r.name ORDER BY r.name")
# Each: a question, the model's wrong SQL, what the finding says, and the SQL a reflection writes instead.
WRONG = [
    ("missing filter", "What is the revenue by region?",
     "SELECT r.name AS region, sum(o.total_amount) AS revenue FROM orders o JOIN customers c "
     "ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id GROUP BY r.name ORDER BY r.name",
     "misses the metric's filter status <> 'cancelled'", REVENUE_BY_REGION),
    ("wrong aggregate", "What is the revenue by region?",
     "SELECT r.name AS region, avg(o.total_amount) FILTER (WHERE o.status <> 'cancelled') AS revenue FROM orders o "
     "JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id GROUP BY r.name",
     "aggregates with avg, not sum", REVENUE_BY_REGION),
    ("wrong join path", "What is the revenue by region?",
     "SELECT r.name AS region, sum(o.total_amount) AS revenue FROM orders o JOIN employees e "
     "ON e.employee_id = o.sales_rep_id JOIN regions r ON r.region_id = e.region_id "
     "WHERE o.status <> 'cancelled' GROUP BY r.name", "joins employees", REVENUE_BY_REGION),
    ("fan-out join", "Revenue of orders with a discounted line",
     "SELECT sum(o.total_amount) AS revenue FROM orders o JOIN order_items i ON i.order_id = o.order_id "
     "WHERE o.status <> 'cancelled' AND i.discount_pct > 0",
     "joins order_items",
     "SELECT sum(o.total_amount) AS revenue FROM orders o WHERE o.status <> 'cancelled' AND EXISTS "
     "(SELECT 1 FROM order_items i WHERE i.order_id = o.order_id AND i.discount_pct > 0)"),
    ("synonym, wrong measure", "Total sales per channel",
     "SELECT channel, sum(total_amount - shipping_fee) AS sales FROM orders WHERE status <> 'cancelled' GROUP BY 1",
     "aggregates total_amount - shipping_fee",
     "SELECT channel, sum(total_amount) AS sales FROM orders WHERE status <> 'cancelled' GROUP BY 1"),
    ("added filter", "Revenue per channel",
     "SELECT channel, sum(total_amount) FILTER (WHERE status = 'delivered') AS revenue FROM orders GROUP BY 1",
     "adds the condition status = 'delivered'",
     "SELECT channel, sum(total_amount) FILTER (WHERE status <> 'cancelled') AS revenue FROM orders GROUP BY 1"),
    ("ratio without its filter", "Average order value by channel",
     "SELECT channel, sum(total_amount) / count(*) AS average_order_value FROM orders GROUP BY 1",
     "its numerator (revenue): it misses the metric's filter",
     "SELECT channel, avg(total_amount) AS average_order_value FROM orders WHERE status <> 'cancelled' GROUP BY 1"),
    ("count of the wrong thing", "How many buyers per segment?",
     "SELECT c.segment, count(o.order_id) AS buyers FROM orders o JOIN customers c USING (customer_id) "
     "WHERE o.status <> 'cancelled' GROUP BY 1", "aggregates with count, not count_distinct",
     "SELECT c.segment, count(DISTINCT o.customer_id) AS buyers FROM orders o JOIN customers c USING (customer_id) "
     "WHERE o.status <> 'cancelled' GROUP BY 1"),
    ("inside a CTE", "Total revenue",
     "WITH t AS (SELECT sum(total_amount) AS revenue FROM orders) SELECT revenue FROM t",
     "misses the metric's filter",
     "WITH t AS (SELECT sum(total_amount) AS revenue FROM orders WHERE status <> 'cancelled') SELECT revenue FROM t"),
    ("line revenue without discount", "Product sales by category",
     "SELECT cat.name AS category, sum(i.quantity * i.unit_price) AS product_sales FROM order_items i "
     "JOIN products p USING (product_id) JOIN categories cat USING (category_id) GROUP BY 1",
     "aggregates i.quantity * i.unit_price",
     "SELECT cat.name AS category, sum(i.quantity * i.unit_price * (1 - i.discount_pct)) AS product_sales "
     "FROM order_items i JOIN products p USING (product_id) JOIN categories cat USING (category_id) GROUP BY 1"),
]

# Correct spellings the model might write: none may be flagged.
CORRECT = [
    REVENUE_BY_REGION,
    "SELECT r.name AS region, sum(o.total_amount) AS revenue FROM orders o JOIN customers c USING (customer_id) "
    "JOIN regions r USING (region_id) WHERE o.status != 'cancelled' GROUP BY 1",
    "SELECT sum(CASE WHEN status <> 'cancelled' THEN total_amount ELSE 0 END) AS turnover FROM orders",
    "SELECT round(sum(total_amount), 2) AS revenue FROM orders WHERE NOT status = 'cancelled'",
    "SELECT channel, sum(total_amount) AS revenue FROM orders WHERE status IN ('shipped', 'delivered') GROUP BY 1",
    "SELECT avg(total_amount) AS aov FROM orders WHERE status NOT IN ('cancelled', 'returned')",
    "SELECT channel, avg(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS cancellation_rate FROM orders GROUP BY 1",
    "SELECT channel, count(*) FILTER (WHERE status = 'cancelled')::numeric / NULLIF(count(*), 0) AS cancellation_rate "
    "FROM orders GROUP BY 1",
    "SELECT count(*) AS order_count, max(total_amount) AS biggest_order FROM orders",
    "SELECT p.brand, max(o.total_amount) AS largest_order_value FROM orders o JOIN order_items i USING (order_id) "
    "JOIN products p USING (product_id) GROUP BY 1",
    "SELECT cat.name, sum(quantity) AS units_sold FROM order_items i JOIN orders o ON o.order_id = i.order_id "
    "JOIN products p ON p.product_id = i.product_id JOIN categories cat ON cat.category_id = p.category_id "
    "WHERE o.channel = 'web' GROUP BY 1",
    "SELECT method, sum(amount) FILTER (WHERE status = 'captured') AS captured_payments FROM payments GROUP BY 1",
    "SELECT segment, count(*) FILTER (WHERE is_active) AS active_customers FROM customers GROUP BY 1",
    "SELECT o.order_id, o.total_amount AS revenue FROM orders o ORDER BY 2 DESC LIMIT 5",  # not an aggregate
    "SELECT channel, sum(total_amount) AS gross_total FROM orders GROUP BY 1",  # not a metric's name
]


def test_compiled_answers_are_never_flagged() -> None:
    flagged = [q["id"] for q in QUESTIONS
               if semantic_findings(MODEL, compile_query(MODEL, MetricQuery.model_validate(q["query"])).sql)]
    assert flagged == []


@pytest.mark.parametrize("text", CORRECT)
def test_correct_spellings_are_not_flagged(text: str) -> None:
    assert semantic_findings(MODEL, text) == []


@pytest.mark.parametrize(("case", "question", "wrong", "says", "fixed"), WRONG, ids=[w[0] for w in WRONG])
def test_each_wrong_computation_is_flagged_and_its_fix_is_not(case: str, question: str, wrong: str, says: str,
                                                               fixed: str) -> None:
    (finding,) = semantic_findings(MODEL, wrong)
    assert finding.code == "metric_definition_mismatch" and says in finding.message, finding.message
    assert semantic_findings(MODEL, fixed) == []


async def rows_of(dsn: str, text: str) -> list[list[Any]]:
    conn = await asyncpg.connect(dsn)
    try:
        return [list(r) for r in await conn.fetch(text)]
    finally:
        await conn.close()


async def test_reflection_corrects_every_wrong_computation(demo_dsn: str, llm: ScriptedLLM,
                                                          dirs: dict[str, Path]) -> None:
    # Generated SQL, not compiled: what enforcement is for (compiled SQL is right by construction).
    settings = ask_settings(demo_dsn, dirs, llm.base_url, compile_metrics=False)
    settings.semantic_dir = ROOT / "semantic"
    corrected = 0
    async with gateway(settings) as (http, _):
        for case, question, wrong, says, fixed in WRONG:
            llm.requests.clear()
            script(llm, sql(wrong), sql(fixed))
            answer = (await post_ask(http, question)).json()
            first, second = answer["attempts"]
            assert [f["code"] for f in first["findings"]] == ["metric_definition_mismatch"], case
            assert first["findings"][0]["metric"] and "definition" in first["findings"][0]
            assert second["source"] == "reflection" and second["findings"] == [], (case, second["findings"])
            assert answer["status"] == "ok" and answer["sql"] == fixed
            reflection = next(r for r in llm.requests if is_reflection(r))
            assert "metric_definition_mismatch" in reflection.last_user and says in reflection.last_user
            assert answer["rows"] == [[_json(v) for v in row] for row in await rows_of(demo_dsn, fixed)], case
            corrected += 1
    assert corrected == len(WRONG)


def _json(value: Any) -> Any:
    return str(value) if not isinstance(value, int | str | type(None)) else value


async def test_a_required_default_filter_is_enforced(demo_dsn: str, llm: ScriptedLLM, dirs: dict[str, Path],
                                                     tmp_path: Path) -> None:
    folder = tmp_path / "semantic"
    folder.mkdir()
    text = (ROOT / "semantic" / "demo.yaml").read_text()
    (folder / "demo.yaml").write_text(text + "\ndefault_filters:\n  - name: no_failed_payments\n    entity: payments\n"
                                      "    sql: status <> 'failed'\n    description: failed attempts moved no money\n")
    settings = ask_settings(demo_dsn, dirs, llm.base_url, compile_metrics=False)
    settings.semantic_dir = folder
    wrong = "SELECT method, count(*) AS attempts FROM payments GROUP BY 1 ORDER BY 1"
    fixed = "SELECT method, count(*) AS attempts FROM payments WHERE status != 'failed' GROUP BY 1 ORDER BY 1"
    script(llm, sql(wrong), sql(fixed))
    async with gateway(settings) as (http, _):
        answer = (await post_ask(http, "Payment attempts per method")).json()
    first, second = answer["attempts"]
    assert [f["code"] for f in first["findings"]] == ["default_filter_missing"]
    assert first["findings"][0]["filter"] == "no_failed_payments"
    assert second["findings"] == [] and answer["status"] == "ok" and answer["sql"] == fixed
