"""The demo's metric questions, compiled from the semantic model, return the rows of hand-written SQL."""

from __future__ import annotations

import doctest
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml

from gateway.safety import check
from gateway.semantic import compile as compile_module
from gateway.semantic.compile import MetricQuery, SemanticQueryError, compile_query
from gateway.semantic.loading import load_model

ROOT = Path(__file__).resolve().parents[2]
MODEL, PROBLEMS = load_model([ROOT / "semantic" / "demo.yaml"])
QUESTIONS = yaml.safe_load((ROOT / "gateway" / "semantic" / "data" / "demo_metric_questions.yaml").read_text())


def normal(rows: list[Any], ordered: bool) -> list[tuple[Any, ...]]:
    out = [tuple(round(v, 6) if isinstance(v, Decimal | float) else v for v in row) for row in rows]
    return out if ordered else sorted(out, key=repr)


def test_doctests() -> None:
    assert doctest.testmod(compile_module).failed == 0


def test_the_set_is_large_and_varied() -> None:
    assert PROBLEMS == []
    assert len(QUESTIONS) >= 30
    queries = [MetricQuery.model_validate(q["query"]) for q in QUESTIONS]
    assert {g for q in queries for g in [q.grain] if g} >= {"week", "month", "quarter", "year"}
    assert sum(bool(q.filters) for q in queries) >= 8
    assert {d for q in queries for d in q.dimensions} >= {"region", "ordered_at", "product", "category", "segment"}


@pytest.mark.parametrize("item", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
async def test_compiled_sql_returns_the_hand_written_rows(demo_dsn: str, item: dict[str, Any]) -> None:
    compiled = compile_query(MODEL, MetricQuery.model_validate(item["query"]))
    assert check(compiled.sql).allowed, compiled.sql
    conn = await asyncpg.connect(demo_dsn)
    try:
        got = await conn.fetch(compiled.sql)
        want = await conn.fetch(item["sql"])
    finally:
        await conn.close()
    assert want, "the hand-written SQL returns rows"
    assert normal(got, item.get("ordered", False)) == normal(want, item.get("ordered", False)), compiled.sql


@pytest.mark.parametrize(("query", "message"), [
    ({"metrics": ["profit"]}, "unknown metric 'profit'"),
    ({"metrics": ["revenue"], "dimensions": ["colour"]}, "unknown dimension 'colour'"),
    ({"metrics": ["revenue"], "dimensions": ["category"]}, "no declared relationship leads from 'orders'"),
    ({"metrics": ["revenue", "units_sold"]}, "different entities"),
    ({"metrics": ["customer_count"], "dimensions": ["signup_date"], "grain": "week"}, "has no 'week' grain"),
    ({"metrics": ["revenue"], "order_by": ["status"]}, "cannot order by 'status'"),
    ({"metrics": ["revenue"], "filters": [{"dimension": "channel", "op": "in", "value": []}]}, "an empty list"),
])
def test_what_the_model_cannot_answer_is_refused(query: dict[str, Any], message: str) -> None:
    with pytest.raises(SemanticQueryError, match=message):
        compile_query(MODEL, MetricQuery.model_validate(query))


def test_values_become_literals_never_sql() -> None:
    evil = "web' OR 1=1 --"
    sql = compile_query(MODEL, MetricQuery.model_validate(
        {"metrics": ["revenue"], "filters": [{"dimension": "channel", "value": evil}]})).sql
    assert "orders.channel = 'web'' OR 1=1 --'" in sql
    assert check(sql).allowed


def test_a_filter_value_that_is_not_a_finite_number_is_refused() -> None:
    # JSON's NaN and Infinity would be written into the SQL as bare names (found by the attacker's review).
    import pydantic

    from gateway.semantic.compile import DimensionFilter

    for value in ("NaN", "Infinity", "[1.5, -Infinity]"):
        with pytest.raises(pydantic.ValidationError):
            DimensionFilter.model_validate_json(f'{{"dimension": "region", "value": {value}}}')
    assert DimensionFilter.model_validate_json('{"dimension": "region", "value": 1.5}').value == 1.5
