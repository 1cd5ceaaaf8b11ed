"""The importers read real-format samples written for this project (dbt MetricFlow via
dbt-semantic-interfaces, Cube, Snowflake Cortex Analyst) into models that round-trip through ``semantic
show`` and answer every demo metric question with the rows of hand-written SQL."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml
from typer.testing import CliRunner

from gateway.cli import app
from gateway.semantic.compile import MetricQuery, compile_query
from gateway.semantic.importers import import_model
from gateway.semantic.loading import load_model, parse_text
from gateway.semantic.show import dump

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).resolve().parent / "samples"
SOURCES = {
    "native": (ROOT / "semantic" / "demo.yaml", "native"),
    "dbt": (ROOT / "gateway" / "demo" / "dbt", "dbt"),
    "cube": (SAMPLES / "cube", "cube"),
    "cortex": (SAMPLES / "cortex" / "shop.yaml", "cortex"),
}
# What each sample holds on purpose that our model has no counterpart for: a warning each, never silence.
WARNINGS = {
    "native": [],
    "dbt": ["metric cumulative_revenue: cumulative metrics have no counterpart",
            "saved query revenue_by_region: saved queries have no SQL"],
    "cube": ["view shop: views have no counterpart", "measure orders.running_revenue: type running_total",
             "cube orders: segments have no counterpart", "cube customers: join to orders (one_to_many)"],
    "cortex": ["filter orders.web_orders: named filters have no counterpart",
               "table order_items: primary key ['order_id', 'line_no'] is not one column"],
}
QUESTIONS = yaml.safe_load((ROOT / "gateway" / "semantic" / "data" / "demo_metric_questions.yaml").read_text())
DEMO_METRICS = set(load_model([ROOT / "semantic" / "demo.yaml"])[0].metrics)


def normal(rows: list[Any], ordered: bool) -> list[tuple[Any, ...]]:
    out = [tuple(round(v, 6) if isinstance(v, Decimal | float) else v for v in row) for row in rows]
    return out if ordered else sorted(out, key=repr)


@pytest.mark.parametrize("fmt", SOURCES)
def test_the_sample_imports_with_a_warning_for_each_construct_without_counterpart(fmt: str) -> None:
    model, problems = import_model(*SOURCES[fmt])
    assert [p for p in problems if p.severity == "error"] == []
    warnings = [p.message for p in problems if p.severity == "warning"]
    assert len(warnings) == len(WARNINGS[fmt]) and all(
        any(w.startswith(expected) for w in warnings) for expected in WARNINGS[fmt]), warnings
    assert set(model.metrics) >= DEMO_METRICS
    assert {m.type for m in model.metrics.values()} == {"simple", "ratio", "derived"}
    assert any(m.filter for m in model.metrics.values()) and any(m.synonyms for m in model.metrics.values())
    assert any(e.relationships for e in model.entities.values())
    assert any(d.type == "time" for e in model.entities.values() for d in e.dimensions.values())


@pytest.mark.parametrize("fmt", SOURCES)
def test_the_round_trip_through_show_is_stable(fmt: str, tmp_path: Path) -> None:
    source, kind = SOURCES[fmt]
    result = CliRunner().invoke(app, ["semantic", "import", str(source), "--format", kind])
    assert result.exit_code == 0, result.output
    again, _, problems = parse_text(result.stdout, "import")
    assert problems == [] and again == import_model(source, kind)[0]
    (tmp_path / "shop.yaml").write_text(result.stdout)
    shown = CliRunner().invoke(app, ["semantic", "show", "--database", "shop", "--semantic-dir", str(tmp_path)])
    assert shown.exit_code == 0 and shown.stdout == result.stdout == dump(again)


def test_cortex_verified_queries_and_cube_calculated_measures_map() -> None:
    cortex = import_model(*SOURCES["cortex"])[0]
    assert [q.name for q in cortex.verified_queries] == ["revenue_by_region"]
    assert cortex.metrics["revenue"].filter == "status <> 'cancelled'"
    assert cortex.metrics["average_order_value"].numerator == "revenue"  # an existing metric, not a copy
    cube = import_model(*SOURCES["cube"])[0]
    assert cube.metrics["merchandise_revenue"].type == "derived"
    assert cube.metrics["cancellation_rate"].denominator == "order_count"
    dbt = import_model(*SOURCES["dbt"])[0]
    assert dbt.metrics["merchandise_revenue"].expr == "revenue - shipping_revenue"  # aliases resolved
    assert dbt.metrics["cancelled_orders"].filter == "status = 'cancelled'"  # a filter on the input measure


@pytest.mark.parametrize("fmt", ["dbt", "cube", "cortex"])
async def test_every_demo_metric_question_answers_the_same_from_the_imported_model(demo_dsn: str, fmt: str) -> None:
    model = import_model(*SOURCES[fmt])[0]
    conn = await asyncpg.connect(demo_dsn)
    try:
        for item in QUESTIONS:
            sql = compile_query(model, MetricQuery.model_validate(item["query"])).sql
            got, want = await conn.fetch(sql), await conn.fetch(item["sql"])
            ordered = item.get("ordered", False)
            assert normal(got, ordered) == normal(want, ordered), (item["id"], sql)
    finally:
        await conn.close()
