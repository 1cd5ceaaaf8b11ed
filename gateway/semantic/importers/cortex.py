"""Snowflake Cortex Analyst semantic model YAML (``name``, ``tables``, ``relationships``,
``verified_queries``; https://docs.snowflake.com/en/user-guide/snowflake-cortex/cortex-analyst/semantic-model-spec).

- a logical table -> an entity (``base_table.table``, ``primary_key.columns`` with one column);
- ``dimensions`` and ``time_dimensions`` (``expr`` a column) -> dimensions, time ones with every grain;
- ``facts`` (or the older ``measures``) with a ``default_aggregation`` -> measures;
- table ``metrics`` (aggregate expressions): ``AGG(x)``, ``AGG(CASE WHEN c THEN x END)`` (-> the measure
  ``AGG(x)`` with filter ``c``), ``COUNT(DISTINCT x)`` -> simple metrics; ``A / B`` and ``A / NULLIF(B, 0)``
  of such aggregates -> ratio metrics (their parts become metrics of their own unless a metric of the same
  table already has that expression); model-level ``metrics`` over table metrics -> derived metrics;
- ``relationships`` (``many_to_one``, one column pair) -> relationships; ``verified_queries`` -> verified
  queries; ``synonyms`` and ``description`` everywhere; named ``filters`` have no counterpart: warnings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlglot
import yaml
from sqlglot import exp

from gateway.semantic.importers.common import ImportProblem
from gateway.semantic.loading import SemanticProblem
from gateway.semantic.model import (
    GRAINS,
    Dimension,
    Entity,
    Measure,
    Metric,
    Relationship,
    SemanticModel,
    VerifiedQuery,
)

_AGG: dict[type[exp.Expr], str] = {exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max", exp.Count: "count"}
_DEFAULT_AGG = {"sum": "sum", "avg": "avg", "average": "avg", "min": "min", "max": "max", "count": "count",
                "count_distinct": "count_distinct"}


def read_cortex(source: Path) -> tuple[SemanticModel, list[SemanticProblem]]:
    if source.is_dir():
        raise ImportProblem(f"{source}: a Cortex Analyst semantic model is one YAML file")
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ImportProblem(f"{source}: cannot read it as YAML: {exc}") from exc
    if not isinstance(data, dict) or "tables" not in data:
        raise ImportProblem(f"{source}: no tables: it is not a Cortex Analyst semantic model")
    where = str(source)
    problems: list[SemanticProblem] = []

    def warn(message: str) -> None:
        problems.append(SemanticProblem(where, 0, message, "warning"))

    entities: dict[str, dict[str, Any]] = {}
    metrics: dict[str, Metric] = {}
    for table in data["tables"]:
        name = table["name"]
        keys = (table.get("primary_key") or {}).get("columns", [])
        if len(keys) != 1:
            warn(f"table {name}: primary key {keys} is not one column; other tables cannot join to it")
        dims: dict[str, Dimension] = {}
        for kind, rows in (("categorical", table.get("dimensions", [])), ("time", table.get("time_dimensions", []))):
            for dim in rows:
                column = _column(dim.get("expr", dim["name"]), name)
                if column is None:
                    warn(f"dimension {name}.{dim['name']}: expr {dim.get('expr')!r} is not a column; skipped")
                    continue
                is_bool = str(dim.get("data_type", "")).lower() == "boolean"
                dims[dim["name"]] = Dimension(
                    column=None if column == dim["name"] else column,
                    type="time" if kind == "time" else "boolean" if is_bool else "categorical",
                    grains=list(GRAINS) if kind == "time" else [], description=dim.get("description", ""),
                    synonyms=[str(s) for s in dim.get("synonyms", [])])
        measures: dict[str, Measure] = {}
        for fact in table.get("facts", []) + table.get("measures", []):
            agg = _DEFAULT_AGG.get(str(fact.get("default_aggregation", "")).lower())
            if agg is None:
                warn(f"fact {name}.{fact['name']}: no default_aggregation we know; skipped")
                continue
            measures[fact["name"]] = Measure(agg=agg, expr=_local(fact.get("expr", fact["name"]), name),  # type: ignore[arg-type]
                                             description=fact.get("description", ""))
        entity = {"table": (table.get("base_table") or {}).get("table", name).lower(),
                  "primary_key": keys[0] if keys else "", "description": table.get("description", ""),
                  "synonyms": [str(s) for s in table.get("synonyms", [])], "relationships": [],
                  "dimensions": dims, "measures": measures}
        entities[name] = entity
        for metric in table.get("metrics", []):
            common = {"description": metric.get("description", ""),
                      "synonyms": [str(s) for s in metric.get("synonyms", [])]}
            found = _metric(metric["name"], metric["expr"], name, entity, metrics, common)
            if found is None:
                warn(f"metric {name}.{metric['name']}: {metric['expr']!r} is not an aggregate or a ratio of two; "
                     "skipped")
        for flt in table.get("filters", []):
            warn(f"filter {name}.{flt.get('name')}: named filters have no counterpart; skipped")
    for metric in data.get("metrics", []):  # model-level metrics: expressions over table metrics
        tree = sqlglot.parse_one(metric["expr"], read="postgres")
        refs = {c.name for c in tree.find_all(exp.Column)}
        if not refs <= set(metrics):
            warn(f"metric {metric['name']}: refers to {sorted(refs - set(metrics))}, not table metrics; skipped")
            continue
        tree = tree.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n)
        metrics[metric["name"]] = Metric(type="derived", expr=tree.sql(dialect="postgres"),
                                         description=metric.get("description", ""),
                                         synonyms=[str(s) for s in metric.get("synonyms", [])])
    for rel in data.get("relationships", []):
        columns = rel.get("relationship_columns", [])
        left, right = rel.get("left_table"), rel.get("right_table")
        if (rel.get("relationship_type", "many_to_one") != "many_to_one" or len(columns) != 1
                or left not in entities or right not in entities
                or columns[0].get("right_column") != entities[right]["primary_key"]):
            warn(f"relationship {rel.get('name')}: not a many-to-one onto {right}'s primary key; skipped")
            continue
        entities[left]["relationships"].append(Relationship(to=right, foreign_key=columns[0]["left_column"]))
    verified = [VerifiedQuery(name=q["name"], question=q["question"], sql=q["sql"].strip(),
                              verified_by=q.get("verified_by", "")) for q in data.get("verified_queries", [])]
    model = SemanticModel(description=data.get("description", ""),
                          entities={k: Entity(**v) for k, v in entities.items()}, metrics=metrics,
                          verified_queries=verified)
    return model, problems


def _metric(name: str, expr: str, table: str, entity: dict[str, Any], metrics: dict[str, Metric],
            common: dict[str, Any]) -> Metric | None:
    tree = _strip_table(sqlglot.parse_one(expr, read="postgres"), table)
    simple = _aggregate(tree, table, entity, name)
    if simple is not None:
        metrics[name] = simple.model_copy(update=common)
        return metrics[name]
    if isinstance(tree, exp.Div):
        right = tree.expression.this if isinstance(tree.expression, exp.Nullif) else tree.expression
        parts = []
        for side, part in (("numerator", tree.this), ("denominator", right)):
            while isinstance(part, exp.Cast | exp.Paren):
                part = part.this
            found = _aggregate(part, table, entity, f"{name}__{side}")
            if found is None:
                return None
            same = next((k for k, m in metrics.items() if m.measure == found.measure and m.filter == found.filter),
                        None)
            if same is None:
                same = f"{name}__{side}"
                metrics[same] = found
            parts.append(same)
        metrics[name] = Metric(type="ratio", numerator=parts[0], denominator=parts[1], **common)
        return metrics[name]
    return None


def _aggregate(tree: exp.Expr, table: str, entity: dict[str, Any], name: str) -> Metric | None:
    """``AGG(x)``, ``AGG(CASE WHEN c THEN x END)``, ``COUNT(DISTINCT x)`` as a measure + simple metric."""
    agg = _AGG.get(type(tree))
    if agg is None:
        return None
    inner = tree.this
    if isinstance(inner, exp.Distinct):
        if agg != "count" or len(inner.expressions) != 1:
            return None
        agg, inner = "count_distinct", inner.expressions[0]
    condition = None
    if isinstance(inner, exp.Case) and len(inner.args.get("ifs") or []) == 1 and not inner.args.get("default"):
        branch = inner.args["ifs"][0]
        condition, inner = branch.this.sql(dialect="postgres"), branch.args["true"]
    if inner is None or isinstance(inner, exp.Star):
        inner = exp.column(entity["primary_key"] or "*")
    body = inner.sql(dialect="postgres")
    measure = next((k for k, m in entity["measures"].items() if m.agg == agg and m.expr == body), None)
    if measure is None:
        measure = name
        entity["measures"][measure] = Measure(agg=agg, expr=body)  # type: ignore[arg-type]
    return Metric(measure=f"{table}.{measure}", filter=condition)


def _strip_table(tree: exp.Expr, table: str) -> exp.Expr:
    for column in tree.find_all(exp.Column):
        if column.table.lower() == table.lower():
            column.set("table", None)
    return tree


def _local(expr: str, table: str) -> str:
    return _strip_table(sqlglot.parse_one(expr, read="postgres"), table).sql(dialect="postgres")


def _column(expr: str, table: str) -> str | None:
    try:
        node = _strip_table(sqlglot.parse_one(expr, read="postgres"), table)
    except sqlglot.errors.ParseError:
        return None
    return node.name if isinstance(node, exp.Column) and not node.table else None
