"""Write the SQL for a metric query, deterministically, from the semantic model.

The LLM (or an MCP client, or a person) only picks names: metrics, dimensions, filters on dimensions with
literal values, a time grain, an order and a limit (:class:`MetricQuery`). Everything else comes from the
model: each metric's aggregation, measure expression and filter, the joins along declared relationships
from the metrics' entity to each dimension's entity, and the default filters of every entity the query
reads. Values enter the SQL as literals built by sqlglot, never as text, so a query cannot smuggle SQL in;
the result is checked and run like any other SQL (safety check, guarded execute, rules).

>>> from gateway.semantic.model import SemanticModel
>>> m = SemanticModel.model_validate({"entities": {"orders": {"table": "orders", "primary_key": "order_id",
...     "dimensions": {"status": {}}, "measures": {"n": {"agg": "count", "expr": "order_id"}}}},
...     "metrics": {"order_count": {"measure": "orders.n"}}})
>>> compile_query(m, MetricQuery(metrics=["order_count"], dimensions=["status"])).sql
'SELECT orders.status AS status, COUNT(orders.order_id) AS order_count FROM orders AS orders GROUP BY 1 ORDER BY 1 ASC'
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

import sqlglot
from pydantic import BaseModel, ConfigDict, Field
from sqlglot import exp

from gateway.semantic.loading import depends_on, metric_refs
from gateway.semantic.model import GRAINS, Grain, Measure, SemanticModel

Operator = Literal["=", "<>", "<", "<=", ">", ">=", "in", "not in"]
Scalar = str | int | float | bool


class SemanticQueryError(ValueError):
    """The query names something the model lacks, or asks for what it cannot compute."""


class DimensionFilter(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN would render as a bare name
    dimension: str
    op: Operator = "="
    value: Scalar | list[Scalar]


class MetricQuery(BaseModel):
    """Names picked from the model; ``grain`` truncates every time dimension of ``dimensions``."""

    model_config = ConfigDict(extra="forbid")
    metrics: list[str] = Field(min_length=1)
    dimensions: list[str] = Field(default_factory=list)
    grain: Grain | None = None
    filters: list[DimensionFilter] = Field(default_factory=list)
    order_by: list[str] = Field(default_factory=list, description="output names; prefix '-' for descending")
    limit: int | None = Field(default=None, ge=1)


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    sql: str
    entity: str  # the entity whose measures are aggregated
    columns: tuple[str, ...]
    metrics: tuple[str, ...]


def leaf_measures(model: SemanticModel, metric: str) -> list[str]:
    """The simple metrics a metric is computed from (itself when simple)."""
    if metric not in model.metrics:
        raise SemanticQueryError(f"unknown metric {metric!r}; known: {', '.join(sorted(model.metrics))}")
    if model.metrics[metric].type == "simple":
        return [metric]
    return [leaf for ref in depends_on(model, metric) for leaf in leaf_measures(model, ref)]


def metric_entity(model: SemanticModel, metric: str) -> str:
    """The one entity a metric aggregates over."""
    entities = {_measure_of(model, leaf)[0] for leaf in leaf_measures(model, metric)}
    if len(entities) != 1:
        raise SemanticQueryError(f"metric {metric!r} combines measures of several entities "
                                 f"({', '.join(sorted(entities))}); the compiler cannot join them safely")
    return entities.pop()


def join_path(model: SemanticModel, start: str, goal: str) -> list[tuple[str, str]]:
    """The declared many-to-one relationships from ``start`` to ``goal``: [(entity, next entity), ...]; the
    shortest one, ties broken by declaration order (so the path is the same on every run)."""
    seen: set[str] = {start}
    queue: deque[tuple[str, list[tuple[str, str]]]] = deque([(start, [])])
    while queue:
        here, path = queue.popleft()
        if here == goal:
            return path
        for rel in model.entities[here].relationships:
            if rel.to not in seen:
                seen.add(rel.to)
                queue.append((rel.to, path + [(here, rel.to)]))
    raise SemanticQueryError(f"no declared relationship leads from {start!r} to {goal!r}")


def compile_query(model: SemanticModel, query: MetricQuery) -> CompiledQuery:
    """The SQL for ``query`` (raises :class:`SemanticQueryError` for what the model cannot answer)."""
    entities = {metric_entity(model, m) for m in query.metrics}
    if len(entities) != 1:
        raise SemanticQueryError("the metrics come from different entities (" + ", ".join(sorted(entities))
                                 + "): ask for them in separate queries")
    base = entities.pop()
    joins: list[tuple[str, str]] = []

    def reach(entity: str) -> None:
        for step in join_path(model, base, entity):
            if step not in joins:
                joins.append(step)

    select: list[exp.Expr] = []
    columns: list[str] = []
    for name in query.dimensions:
        found = model.dimension(name)
        if found is None:
            raise SemanticQueryError(f"unknown dimension {name!r}; known: "
                                     + ", ".join(sorted(d for e in model.entities.values() for d in e.dimensions)))
        reach(found[0])
        expr, alias = _dimension_sql(model, name, query.grain)
        select.append(exp.alias_(expr, alias, quoted=False))
        columns.append(alias)
    where: list[exp.Expr] = []
    for flt in query.filters:
        found = model.dimension(flt.dimension)
        if found is None:
            raise SemanticQueryError(f"unknown dimension {flt.dimension!r} in a filter")
        reach(found[0])
        where.append(_filter_sql(model, flt))
    for name in query.metrics:
        select.append(exp.alias_(metric_sql(model, name), name, quoted=False))
        columns.append(name)
    read = [base] + [to for _, to in joins]
    for default in model.default_filters:
        if default.entity in read:
            where.append(qualify(default.sql, default.entity))
    sql = exp.select(*select).from_(exp.alias_(exp.to_table(model.entities[base].table), base, table=True))
    for here, to in joins:
        target = model.entities[to]
        fk = next(r.foreign_key for r in model.entities[here].relationships if r.to == to)
        on = exp.EQ(this=exp.column(target.primary_key, table=to), expression=exp.column(fk, table=here))
        sql = sql.join(exp.alias_(exp.to_table(target.table), to, table=True), on=on, join_type="left")
    if where:
        sql = sql.where(exp.and_(*where))
    if query.dimensions:
        sql = sql.group_by(*[exp.Literal.number(i + 1) for i in range(len(query.dimensions))])
    order = query.order_by or columns[: len(query.dimensions)]
    for key in order:
        name = key.lstrip("-")
        if name not in columns:
            raise SemanticQueryError(f"cannot order by {name!r}: not an output column ({', '.join(columns)})")
        position = exp.Literal.number(columns.index(name) + 1)
        sql = sql.order_by(exp.Ordered(this=position, desc=key.startswith("-")))
    if query.limit is not None:
        sql = sql.limit(query.limit)
    return CompiledQuery(sql.sql(dialect="postgres"), base, tuple(columns), tuple(query.metrics))


def metric_sql(model: SemanticModel, name: str) -> exp.Expr:
    """One metric's expression over the aliases its entity has in a compiled query."""
    metric = model.metrics[name]
    if metric.type == "simple":
        entity, measure = _measure_of(model, name)
        value = qualify(measure.expr, entity)
        agg: exp.Expr
        if measure.agg == "count_distinct":
            agg = exp.Count(this=exp.Distinct(expressions=[value]))
        else:
            agg = {"sum": exp.Sum, "count": exp.Count, "avg": exp.Avg, "min": exp.Min, "max": exp.Max}[
                measure.agg](this=value)
        if metric.filter:
            agg = exp.Filter(this=agg, expression=exp.Where(this=qualify(metric.filter, entity)))
        return agg
    if metric.type == "ratio":
        assert metric.numerator and metric.denominator  # checked when the model loaded
        numerator = exp.Cast(this=metric_sql(model, metric.numerator), to=exp.DataType.build("numeric"))
        denominator = exp.func("nullif", metric_sql(model, metric.denominator), exp.Literal.number(0))
        return exp.Div(this=numerator, expression=denominator)
    assert metric.expr
    tree = sqlglot.parse_one(metric.expr, read="postgres")
    refs = set(metric_refs(metric.expr))
    return exp.Paren(this=tree.transform(
        lambda node: exp.Paren(this=metric_sql(model, node.name))
        if isinstance(node, exp.Column) and node.name in refs else node))


def qualify(text: str, alias: str) -> exp.Expr:
    """A model SQL fragment with every bare column read from ``alias``."""
    tree = sqlglot.parse_one(text, read="postgres")
    for column in list(tree.find_all(exp.Column)):
        if not column.table:
            column.set("table", exp.to_identifier(alias))
    return tree


def _measure_of(model: SemanticModel, metric: str) -> tuple[str, Measure]:
    ref = model.metrics[metric].measure or ""
    found = model.measure(ref)
    if found is None:
        raise SemanticQueryError(f"metric {metric!r}: unknown measure {ref!r}")
    return found


def _dimension_sql(model: SemanticModel, name: str, grain: Grain | None) -> tuple[exp.Expr, str]:
    entity, dim = model.dimension(name) or ("", None)
    assert dim is not None
    column = exp.column(dim.column or name, table=entity)
    if dim.type != "time":
        return column, name
    allowed = dim.grains or list(GRAINS)
    chosen = grain or ("day" if "day" in allowed else allowed[0])
    if chosen not in allowed:
        raise SemanticQueryError(f"dimension {name!r} has no {chosen!r} grain (it has {', '.join(allowed)})")
    truncated = exp.func("date_trunc", exp.Literal.string(chosen), column)
    return exp.Cast(this=truncated, to=exp.DataType.build("date")), f"{name}__{chosen}"


def _filter_sql(model: SemanticModel, flt: DimensionFilter) -> exp.Expr:
    entity, dim = model.dimension(flt.dimension) or ("", None)
    assert dim is not None
    column = exp.column(dim.column or flt.dimension, table=entity)
    if flt.op in ("in", "not in"):
        values = flt.value if isinstance(flt.value, list) else [flt.value]
        if not values:
            raise SemanticQueryError(f"filter on {flt.dimension!r}: an empty list")
        node: exp.Expr = exp.In(this=column, expressions=[_literal(v) for v in values])
        return exp.Not(this=node) if flt.op == "not in" else node
    if isinstance(flt.value, list):
        raise SemanticQueryError(f"filter on {flt.dimension!r}: {flt.op} takes one value, not a list")
    value = _literal(flt.value)
    ops = {"=": exp.EQ, "<>": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}
    return ops[flt.op](this=column, expression=value)


def _literal(value: Scalar) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(value)
