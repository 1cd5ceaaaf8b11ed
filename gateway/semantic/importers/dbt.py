"""dbt Semantic Layer (MetricFlow) projects: ``semantic_models:`` and ``metrics:`` YAML, parsed with
``dbt-semantic-interfaces`` (the package dbt-core and MetricFlow use; the ``[semantic]`` extra).

A dbt project writes ``model: ref('orders')``; dbt-core turns that into a ``node_relation`` before
MetricFlow sees it. We do the same (the relation's alias is the ref's name), hand every document to
``dbt_semantic_interfaces``' parser and transformations (so what dbt accepts, we accept), then map:

- a semantic model -> an entity (its primary entity's ``expr`` is the key; each foreign entity whose name is
  another semantic model's primary entity -> a relationship);
- dimensions -> dimensions (``expr`` must be a column; ``time`` ones get the grains from their
  ``time_granularity`` up); measures -> measures (``average`` -> avg, ``sum_boolean`` -> sum of the flag as
  an integer); ``config.meta.synonyms`` -> synonyms;
- metrics: ``simple`` (a metric ``filter`` or a measure ``filter`` that reads the same semantic model's
  dimensions -> the metric's filter), ``ratio``, ``derived`` (input aliases replaced by metric names);
  ``cumulative`` and ``conversion`` metrics, percentile and median measures have no counterpart: warnings.
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

_REF = re.compile(r"""ref\(\s*['"]([^'"]+)['"]\s*\)""")
_DIMENSION = re.compile(r"""\{\{\s*Dimension\(\s*['"]([a-z0-9_]+)__([a-z0-9_]+)['"]\s*\)\s*\}\}""", re.I)
_AGG = {"sum": "sum", "count": "count", "count_distinct": "count_distinct", "average": "avg", "min": "min",
        "max": "max", "sum_boolean": "sum"}


def read_dbt(source: Path) -> tuple[SemanticModel, list[SemanticProblem]]:
    """A dbt project folder (or one YAML file of it) as a model, with warnings for what does not map."""
    try:
        from dbt_semantic_interfaces.parsing.dir_to_model import parse_yaml_files_to_validation_ready_semantic_manifest
        from dbt_semantic_interfaces.parsing.objects import YamlConfigFile
    except ImportError as exc:  # an optional extra
        raise ImportProblem("reading dbt projects needs dbt-semantic-interfaces: pip install "
                            "'nl2sql-gateway[semantic]'") from exc
    files = sorted(p for p in source.rglob("*.y*ml") if p.name != "dbt_project.yml") if source.is_dir() else [source]
    documents: list[YamlConfigFile] = []
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ImportProblem(f"{path}: cannot read it as YAML: {exc}") from exc
        docs = [{"semantic_model": _node_relation(m)} for m in (data or {}).get("semantic_models", [])]
        docs += [{"metric": _metric_inputs(m)} for m in (data or {}).get("metrics", [])]
        docs += [{"saved_query": q} for q in (data or {}).get("saved_queries", [])]
        if docs:
            documents.append(YamlConfigFile(filepath=str(path), contents=yaml.safe_dump_all(docs, sort_keys=False)))
    if not documents:
        raise ImportProblem(f"{source}: no semantic_models, metrics or saved_queries in it")
    documents.append(YamlConfigFile(filepath="<project>", contents=yaml.safe_dump(
        {"project_configuration": {"time_spine_table_configurations": []}})))
    try:
        result = parse_yaml_files_to_validation_ready_semantic_manifest(documents, raise_issues_as_exceptions=False)
    except Exception as exc:  # the parser raises its own exception types for documents it cannot read
        raise ImportProblem(f"{source}: dbt-semantic-interfaces cannot parse it: {exc}") from exc
    problems = [_problem(issue, str(source)) for issue in result.issues.errors]
    model, found = _map(result.semantic_manifest, str(source))
    return model, problems + found


def _problem(issue: Any, where: str) -> SemanticProblem:
    context = getattr(issue, "context", None)
    file_context = getattr(context, "file_context", context)
    file = getattr(file_context, "file_name", None) or where
    line = getattr(file_context, "line_number", None) or 0
    return SemanticProblem(file, line, f"dbt-semantic-interfaces: {issue.message}")


def _node_relation(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    model = doc.pop("model", None)
    if model is not None and "node_relation" not in doc:
        match = _REF.search(str(model))
        doc["node_relation"] = {"alias": match.group(1) if match else str(model), "schema_name": "public"}
    return doc


def _metric_inputs(doc: dict[str, Any]) -> dict[str, Any]:
    """dbt-core accepts ``numerator: revenue``; the parser wants ``{name: revenue}`` (dbt-core converts too)."""
    params = doc.get("type_params")
    if not isinstance(params, dict):
        return doc
    params = dict(params)
    for key in ("numerator", "denominator"):
        if isinstance(params.get(key), str):
            params[key] = {"name": params[key]}
    if isinstance(params.get("metrics"), list):
        params["metrics"] = [{"name": m} if isinstance(m, str) else m for m in params["metrics"]]
    return {**doc, "type_params": params}


def _map(manifest: Any, where: str) -> tuple[SemanticModel, list[SemanticProblem]]:
    problems: list[SemanticProblem] = []

    def warn(message: str) -> None:
        problems.append(SemanticProblem(where, 0, message, "warning"))

    owner_of_entity: dict[str, str] = {}  # primary entity name -> semantic model name
    for sm in manifest.semantic_models:
        for ent in sm.entities:
            if ent.type.value == "primary":
                owner_of_entity[ent.name] = sm.name
    measure_owner: dict[str, str] = {}
    dimension_columns: dict[tuple[str, str], str] = {}  # (entity name, dimension) -> column
    used: set[str] = set()
    entities: dict[str, Entity] = {}
    for sm in manifest.semantic_models:
        primary = next((e for e in sm.entities if e.type.value in ("primary", "unique", "natural")), None)
        if primary is None:
            warn(f"semantic model {sm.name}: no primary entity; its primary_key is left as its first entity's")
        key_entity = primary or sm.entities[0]
        relationships = [Relationship(to=owner_of_entity[e.name], foreign_key=e.expr or e.name)
                         for e in sm.entities if e.type.value == "foreign" and e.name in owner_of_entity]
        dims: dict[str, Dimension] = {}
        for dim in sm.dimensions:
            column = dim.expr or dim.name
            if not is_bare_column(column):
                warn(f"dimension {sm.name}.{dim.name}: expr {column!r} is not a column; skipped")
                continue
            name = dim.name if dim.name not in used else f"{sm.name}_{dim.name}"
            if name != dim.name:
                warn(f"dimension {sm.name}.{dim.name} is named {name} (dimension names are unique in our model)")
            used.add(name)
            for ent in sm.entities:
                dimension_columns[(ent.name, dim.name)] = column
            grains: list[Any] = []
            if dim.type.value == "time" and dim.type_params is not None:
                base = dim.type_params.time_granularity.value
                grains = list(GRAINS[GRAINS.index(base):]) if base in GRAINS else list(GRAINS)
            dims[name] = Dimension(column=None if column == name else column,
                                   type="time" if dim.type.value == "time" else "categorical", grains=grains,
                                   description=dim.description or "", synonyms=_synonyms(dim))
        measures: dict[str, Measure] = {}
        for measure in sm.measures:
            agg = _AGG.get(measure.agg.value)
            if agg is None:
                warn(f"measure {measure.name}: aggregation {measure.agg.value} has no counterpart; skipped")
                continue
            expr = measure.expr or measure.name
            if measure.agg.value == "sum_boolean":
                expr = f"CAST({expr} AS integer)"
            measures[measure.name] = Measure(agg=agg, expr=str(expr),  # type: ignore[arg-type]
                                             description=measure.description or "")
            measure_owner[measure.name] = sm.name
        entities[sm.name] = Entity(table=sm.node_relation.alias, primary_key=key_entity.expr or key_entity.name,
                                   description=sm.description or "", relationships=relationships,
                                   dimensions=dims, measures=measures)
    metrics: dict[str, Metric] = {}
    for metric in manifest.metrics:
        found = _metric(metric, measure_owner, dimension_columns, warn)
        if found is not None:
            metrics[metric.name] = found
    for query in getattr(manifest, "saved_queries", []):
        warn(f"saved query {query.name}: saved queries have no SQL of their own; not imported as verified queries")
    return SemanticModel(entities=entities, metrics=metrics), problems


def _metric(metric: Any, measure_owner: dict[str, str], columns: dict[tuple[str, str], str],
            warn: Any) -> Metric | None:
    kind = metric.type.value
    common: dict[str, Any] = {"label": metric.label or "", "description": metric.description or "",
                              "synonyms": _synonyms(metric)}
    params = metric.type_params
    if kind == "simple":
        measure = params.measure
        owner = measure_owner.get(measure.name) if measure else None
        if owner is None:
            warn(f"metric {metric.name}: measure {measure.name if measure else None!r} was not imported; skipped")
            return None
        filters = [f for flt in (metric.filter, measure.filter) if flt for f in flt.where_filters]
        sql = []
        for flt in filters:
            text = _filter_sql(flt.where_sql_template, columns)
            if text is None:
                warn(f"metric {metric.name}: filter {flt.where_sql_template!r} reads something other than "
                     "dimensions of its own semantic model; skipped")
                return None
            sql.append(text)
        return Metric(type="simple", measure=f"{owner}.{measure.name}",
                      filter=" AND ".join(f"({s})" if len(sql) > 1 else s for s in sql) or None, **common)
    if kind == "ratio":
        if (params.numerator and params.numerator.filter) or (params.denominator and params.denominator.filter):
            warn(f"metric {metric.name}: filters on ratio inputs have no counterpart; skipped")
            return None
        return Metric(type="ratio", numerator=params.numerator.name, denominator=params.denominator.name, **common)
    if kind == "derived":
        renames = {m.alias or m.name: m.name for m in params.metrics or []}
        if any(m.filter or m.offset_window or m.offset_to_grain for m in params.metrics or []):
            warn(f"metric {metric.name}: filtered or offset inputs have no counterpart; skipped")
            return None
        tree = sqlglot.parse_one(params.expr, read="postgres")
        tree = tree.transform(lambda n: exp.column(renames[n.name]) if isinstance(n, exp.Column)
                              and n.name in renames else n)
        return Metric(type="derived", expr=tree.sql(dialect="postgres"), **common)
    warn(f"metric {metric.name}: {kind} metrics have no counterpart in our model; skipped")
    return None


def _filter_sql(template: str, columns: dict[tuple[str, str], str]) -> str | None:
    missing = False

    def column(match: re.Match[str]) -> str:
        nonlocal missing
        found = columns.get((match.group(1), match.group(2)))
        missing = missing or found is None
        return found or ""

    text = _DIMENSION.sub(column, template)
    return None if missing or "{{" in text else text.strip()


def _synonyms(element: Any) -> list[str]:
    config = getattr(element, "config", None)
    found = (config.meta if config is not None else {}).get("synonyms", [])
    return [str(s) for s in found] if isinstance(found, list) else []
