"""Our compiled SQL agrees with MetricFlow's own (the ``metricflow`` extra) on the demo's dbt project, on every
metric question MetricFlow can express: same rows on the demo database."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml

from gateway.semantic.compile import MetricQuery, compile_query
from gateway.semantic.importers import import_model

pytest.importorskip("metricflow", reason="the metricflow extra is not installed")

from gateway.semantic.metricflow import MetricFlowProject  # noqa: E402 - after the skip

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "gateway" / "demo" / "dbt"
QUESTIONS = yaml.safe_load((ROOT / "gateway" / "semantic" / "data" / "demo_metric_questions.yaml").read_text())


def normal(rows: list[Any], ordered: bool) -> list[tuple[Any, ...]]:
    def one(value: Any) -> Any:
        if isinstance(value, Decimal | float):
            return round(float(value), 6)
        if isinstance(value, datetime.datetime):
            return value.date()
        return value

    out = [tuple(one(v) for v in row) for row in rows]
    return out if ordered else sorted(out, key=repr)


def _as_ours(names: list[str], rows: list[Any]) -> list[tuple[Any, ...]]:
    """MetricFlow's rows with its columns in our order: ``customer__sales_region__region`` is our ``region``."""
    if not rows:
        return []
    keys = list(rows[0].keys())
    order = [next(k for k in keys if k == name or k.endswith("__" + name)) for name in names]
    return [tuple(row[k] for k in order) for row in rows]


async def test_compiled_sql_agrees_with_metricflow(demo_dsn: str) -> None:
    project = MetricFlowProject(PROJECT)
    # Order lines have no date of their own, and MetricFlow wants one for every measure.
    assert project.unsupported == {"product_sales", "units_sold", "cumulative_revenue"}
    model = import_model(PROJECT, "dbt")[0]
    conn = await asyncpg.connect(demo_dsn)
    agreed = []
    try:
        for item in QUESTIONS:
            query = MetricQuery.model_validate(item["query"])
            if set(query.metrics) & project.unsupported:
                continue
            ours = await conn.fetch(compile_query(model, query).sql)
            theirs_sql = project.sql(query)
            theirs = _as_ours(list(ours[0].keys()) if ours else [], await conn.fetch(theirs_sql))
            ordered = item.get("ordered", False)
            assert normal(ours, ordered) == normal(theirs, ordered), (item["id"], theirs_sql)
            agreed.append(item["id"])
    finally:
        await conn.close()
    assert len(agreed) == 29, agreed
