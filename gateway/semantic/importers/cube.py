"""Cube data models in YAML (``cubes:``; ``views:`` are left out with a warning).

- a cube -> an entity (``sql_table``, or ``sql: SELECT * FROM t``); the ``primary_key: true`` dimension is
  its key; ``joins`` with ``relationship: many_to_one`` (or ``belongs_to``) and ``{CUBE}.fk = {other}.pk``
  -> relationships;
- dimensions (``string``/``number``/``boolean``/``time``; ``sql`` must be a column) -> dimensions, the
  ``time`` ones with every grain; ``meta.synonyms`` -> synonyms;
- measures ``count``, ``count_distinct``, ``sum``, ``avg``, ``min``, ``max`` -> a measure and a simple
  metric of the same name (``filters`` -> the metric's filter); ``number`` measures over other measures ->
  ``ratio`` (``{a} / {b}``, also ``/ NULLIF({b}, 0)``) or ``derived`` metrics;
- segments, pre-aggregations, ``running_total`` and the like have no counterpart: warnings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import sqlglot
import yaml
from sqlglot import exp

from gateway.semantic.importers.common import ImportProblem
from gateway.semantic.loading import SemanticProblem, is_bare_column
from gateway.semantic.model import GRAINS, Dimension, Entity, Measure, Metric, Relationship, SemanticModel

_AGG = {"count": "count", "count_distinct": "count_distinct", "count_distinct_approx": "count_distinct",
        "sum": "sum", "avg": "avg", "min": "min", "max": "max"}
_MEMBER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\}")


def read_cube(source: Path) -> tuple[SemanticModel, list[SemanticProblem]]:
    files = sorted(source.rglob("*.y*ml")) if source.is_dir() else [source]
    cubes: list[tuple[str, dict[str, Any]]] = []
    problems: list[SemanticProblem] = []
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ImportProblem(f"{path}: cannot read it as YAML: {exc}") from exc
        cubes += [(str(path), c) for c in data.get("cubes", [])]
        for view in data.get("views", []):
            problems.append(SemanticProblem(str(path), 0, f"view {view.get('name')}: views have no counterpart "
                                            "(they re-export cube members); skipped", "warning"))
    if not cubes:
        raise ImportProblem(f"{source}: no cubes in it")
    entities: dict[str, Entity] = {}
    metrics: dict[str, Metric] = {}
    used_dims: set[str] = set()
    for where, cube in cubes:
        def warn(message: str, where: str = where) -> None:
            problems.append(SemanticProblem(where, 0, message, "warning"))

        name = cube["name"]
        table = cube.get("sql_table") or _table_of(cube.get("sql", ""))
        if not table:
            warn(f"cube {name}: its sql is not a plain table; skipped")
            continue
        table = str(table).split(".")[-1]
        key: dict[str, Any] = next((d for d in cube.get("dimensions", []) if d.get("primary_key")), {})
        dims: dict[str, Dimension] = {}
        for dim in cube.get("dimensions", []):
            if dim is key and not dim.get("public", False):
                continue
            column = _strip(dim.get("sql", dim["name"]))
            if not is_bare_column(column):
                warn(f"dimension {name}.{dim['name']}: sql {column!r} is not a column; skipped")
                continue
            dname = dim["name"] if dim["name"] not in used_dims else f"{name}_{dim['name']}"
            used_dims.add(dname)
            kind = {"time": "time", "boolean": "boolean"}.get(dim.get("type", "string"), "categorical")
            dims[dname] = Dimension(column=None if column == dname else column, type=kind,  # type: ignore[arg-type]
                                    grains=list(GRAINS) if kind == "time" else [],
                                    description=dim.get("description", "") or dim.get("title", ""),
                                    synonyms=_synonyms(dim))
        relationships = []
        for join in cube.get("joins", []):
            kind = join.get("relationship", "many_to_one")
            fk = _foreign_key(join.get("sql", ""), join["name"])
            if kind not in ("many_to_one", "belongs_to", "manyToOne", "belongsTo") or fk is None:
                warn(f"cube {name}: join to {join['name']} ({kind}) is not a many-to-one on one column; skipped")
                continue
            relationships.append(Relationship(to=join["name"], foreign_key=fk))
        measures: dict[str, Measure] = {}
        for measure in cube.get("measures", []):
            mname, kind = measure["name"], measure.get("type", "number")
            metric_name = mname if mname not in metrics else f"{name}_{mname}"
            common: dict[str, Any] = {"label": measure.get("title", ""), "description": measure.get("description", ""),
                      "synonyms": _synonyms(measure)}
            if kind in _AGG:
                expr = _strip(measure.get("sql", key.get("sql", key["name"]) if key else "*"))
                measures[mname] = Measure(agg=_AGG[kind], expr=expr)  # type: ignore[arg-type]
                conditions = [_strip(f["sql"]) for f in measure.get("filters", [])]
                condition = " AND ".join(f"({c})" if len(conditions) > 1 else c for c in conditions) or None
                metrics[metric_name] = Metric(measure=f"{name}.{mname}", filter=condition, **common)
            elif kind == "number" and "sql" in measure:
                metrics[metric_name] = _calculated(measure["sql"], common)
            else:
                warn(f"measure {name}.{mname}: type {kind} has no counterpart; skipped")
        for key_name in ("segments", "pre_aggregations", "hierarchies"):
            if cube.get(key_name):
                warn(f"cube {name}: {key_name} have no counterpart; skipped")
        entities[name] = Entity(table=table, primary_key=_strip(key.get("sql", key["name"])) if key else "id",
                                description=cube.get("description", "") or cube.get("title", ""),
                                relationships=relationships, dimensions=dims, measures=measures)
    return SemanticModel(entities=entities, metrics=metrics), problems


def _calculated(sql: str, common: dict[str, Any]) -> Metric:
    """``{a} / {b}`` (or ``/ NULLIF({b}, 0)``) -> ratio; anything else over members -> derived."""
    text = _MEMBER.sub(lambda m: m.group(2) or m.group(1), sql)
    tree = sqlglot.parse_one(text, read="postgres")
    if isinstance(tree, exp.Div):
        left, right = tree.this, tree.expression
        while isinstance(left, exp.Cast | exp.Paren):
            left = left.this
        if isinstance(right, exp.Nullif):
            right = right.this
        if isinstance(left, exp.Column) and isinstance(right, exp.Column):
            return Metric(type="ratio", numerator=left.name, denominator=right.name, **common)
    return Metric(type="derived", expr=tree.sql(dialect="postgres"), **common)


def _strip(sql: str) -> str:
    """``{CUBE}.status`` and ``{CUBE.status}`` -> ``status``."""
    text = re.sub(r"\{CUBE\}\.", "", str(sql))
    return re.sub(r"\{CUBE\.([A-Za-z_][A-Za-z0-9_]*)\}", r"\1", text).strip()


def _foreign_key(sql: str, other: str) -> str | None:
    text = sql.replace("{CUBE}", "this_cube").replace("{CUBE.", "{this_cube.")
    text = _MEMBER.sub(lambda m: f"{m.group(1)}.{m.group(2)}" if m.group(2) else m.group(1), text)
    try:
        tree = sqlglot.parse_one(text, read="postgres")
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(tree, exp.EQ):
        return None
    for mine, theirs in ((tree.this, tree.expression), (tree.expression, tree.this)):
        if (isinstance(mine, exp.Column) and mine.table == "this_cube" and isinstance(theirs, exp.Column)
                and theirs.table == other):
            return mine.name
    return None


def _table_of(sql: str) -> str | None:
    try:
        tree = sqlglot.parse_one(sql, read="postgres") if sql else None
    except sqlglot.errors.ParseError:
        return None
    if (isinstance(tree, exp.Select) and len(tree.expressions) == 1 and isinstance(tree.expressions[0], exp.Star)
            and not tree.args.get("where") and not tree.args.get("joins")):
        source = tree.args.get("from") or tree.args.get("from_")
        table = source.this if source is not None else None
        return table.name if isinstance(table, exp.Table) else None
    return None


def _synonyms(element: dict[str, Any]) -> list[str]:
    found = (element.get("meta") or {}).get("synonyms", [])
    return [str(s) for s in found] if isinstance(found, list) else []
