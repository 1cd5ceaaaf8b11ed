"""What a client may see of a semantic model: metrics and dimensions with their definitions, minus whatever
reads a table or column the database's rules hide (a definition would otherwise name it)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from gateway.semantic.compile import SemanticQueryError, join_path, leaf_measures, metric_entity, metric_sql
from gateway.semantic.loading import depends_on
from gateway.semantic.model import GRAINS, SemanticModel


def hidden_parts(model: SemanticModel, hidden_tables: frozenset[str],
                 hidden_columns: frozenset[str]) -> tuple[set[str], set[str]]:
    """The metrics and dimensions that read a hidden table or column (lower-case ``table.column`` names)."""
    dims: set[str] = set()
    for entity in model.entities.values():
        table = entity.table.lower()
        for name, dim in entity.dimensions.items():
            if table in hidden_tables or f"{table}.{(dim.column or name).lower()}" in hidden_columns:
                dims.add(name)
    metrics: set[str] = set()
    for name in model.metrics:
        try:
            leaves = leaf_measures(model, name)
            entity = model.entities[metric_entity(model, name)]
        except (SemanticQueryError, KeyError):
            metrics.add(name)
            continue
        table = entity.table.lower()
        read = {c.name.lower() for leaf in leaves for c in metric_sql(model, leaf).find_all(exp.Column)}
        if table in hidden_tables or any(f"{table}.{c}" in hidden_columns for c in read):
            metrics.add(name)
    # a ratio or derived metric over a hidden one is hidden too
    changed = True
    while changed:
        changed = False
        for name in model.metrics:
            if name not in metrics and any(ref in metrics for ref in _refs(model, name)):
                metrics.add(name)
                changed = True
    return metrics, dims


def _refs(model: SemanticModel, name: str) -> list[str]:
    try:
        return depends_on(model, name)
    except Exception:  # noqa: BLE001 - an unreadable expression: treat as referring to nothing
        return []


def visible(model: SemanticModel, hidden_tables: frozenset[str], hidden_columns: frozenset[str]) -> dict[str, Any]:
    """The model as ``GET /v1/databases/{name}/semantic``, ``list_metrics`` and the console show it."""
    hidden_metrics, hidden_dims = hidden_parts(model, hidden_tables, hidden_columns)
    metrics = []
    for name, metric in model.metrics.items():
        if name in hidden_metrics:
            continue
        entity = metric_entity(model, name)
        reachable = []
        for other, e in model.entities.items():
            try:
                join_path(model, entity, other)
            except SemanticQueryError:
                continue
            reachable += [d for d in e.dimensions if d not in hidden_dims]
        metrics.append({"name": name, "type": metric.type, "label": metric.label, "description": metric.description,
                        "synonyms": list(metric.synonyms), "entity": entity,
                        "definition": metric_sql(model, name).sql(dialect="postgres"),
                        "depends_on": depends_on(model, name), "dimensions": reachable})
    dimensions = [{"name": name, "entity": entity_name, "table": e.table, "column": dim.column or name,
                   "type": dim.type, "grains": list(dim.grains or (GRAINS if dim.type == "time" else ())),
                   "description": dim.description, "synonyms": list(dim.synonyms)}
                  for entity_name, e in model.entities.items() if e.table.lower() not in hidden_tables
                  for name, dim in e.dimensions.items() if name not in hidden_dims]
    return {"metrics": metrics, "dimensions": dimensions,
            "default_filters": [f.model_dump() for f in model.default_filters
                                if model.entities[f.entity].table.lower() not in hidden_tables],
            "verified_queries": [{"name": q.name, "question": q.question} for q in model.verified_queries]}
