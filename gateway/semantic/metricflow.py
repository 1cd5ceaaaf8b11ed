"""MetricFlow's own SQL for a metric query on a dbt project (the ``metricflow`` extra), to check our compiler
against it. MetricFlow renders SQL offline: it needs the semantic manifest (parsed here from the project's
YAML with MetricFlow's own copy of dbt-semantic-interfaces, as :mod:`gateway.semantic.importers.dbt` does
with dbt's) and a SQL dialect, no connection and no dbt adapter.

A :class:`~gateway.semantic.compile.MetricQuery` maps onto MetricFlow's names: a dimension becomes
``entity__...__dimension`` along the entity path from the metric's semantic model (``customer__sales_region__
region``), a time dimension gets ``__grain``, filters become ``{{ Dimension(...) }}`` where constraints.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import yaml

from gateway.semantic.compile import MetricQuery, SemanticQueryError


class MetricFlowProject:
    """A dbt project's semantic layer, loaded into MetricFlow once."""

    def __init__(self, project: Path) -> None:
        from metricflow.engine.metricflow_engine import MetricFlowEngine
        from metricflow.protocols.sql_client import SqlEngine
        from metricflow.sql.render.postgres import PostgresSQLSqlPlanRenderer
        from metricflow_semantic_interfaces.parsing.dir_to_model import (
            parse_yaml_files_to_validation_ready_semantic_manifest,
        )
        from metricflow_semantic_interfaces.parsing.objects import YamlConfigFile
        from metricflow_semantics.model.semantic_manifest_lookup import SemanticManifestLookup

        from gateway.semantic.importers.dbt import _metric_inputs, _node_relation

        documents = []
        self.models: dict[str, dict[str, Any]] = {}
        # MetricFlow needs a time dimension for every measure: measures without one (order lines have no date
        # of their own) and the metrics on them are left out, and said so in ``unsupported``.
        self.unsupported: set[str] = set()
        files = sorted(p for p in project.rglob("*.y*ml") if p.name != "dbt_project.yml")
        texts = [yaml.safe_load(path.read_text(encoding="utf-8")) or {} for path in files]
        dropped: set[str] = set()
        for data in texts:
            for sm in data.get("semantic_models", []):
                if not (sm.get("defaults") or {}).get("agg_time_dimension"):
                    dropped |= {m["name"] for m in sm.get("measures", []) if not m.get("agg_time_dimension")}
        for path, data in zip(files, texts, strict=True):
            models = []
            for sm in data.get("semantic_models", []):
                models.append({**sm, "measures": [m for m in sm.get("measures", []) if m["name"] not in dropped]})
            metrics = []
            for m in data.get("metrics", []):
                measure = (m.get("type_params") or {}).get("measure")
                name = measure if isinstance(measure, str) else (measure or {}).get("name")
                if name in dropped or m.get("type") in ("cumulative", "conversion"):
                    self.unsupported.add(m["name"])
                else:
                    metrics.append(m)
            docs = [{"semantic_model": _node_relation(m)} for m in models]
            docs += [{"metric": _metric_inputs(m)} for m in metrics]
            for doc in docs:
                if "semantic_model" in doc:
                    self.models[doc["semantic_model"]["name"]] = doc["semantic_model"]
            if docs:
                documents.append(YamlConfigFile(filepath=str(path), contents=yaml.safe_dump_all(docs)))
        documents.append(YamlConfigFile(filepath="<project>", contents=yaml.safe_dump({"project_configuration": {
            "time_spines": [{"node_relation": {"alias": "time_spine", "schema_name": "public"},
                             "primary_column": {"name": "date_day", "time_granularity": "day"}}]}})))
        manifest = parse_yaml_files_to_validation_ready_semantic_manifest(documents).semantic_manifest

        class _Dialect:  # what explain() asks of a SQL client: the engine and its renderer, no connection
            sql_engine_type = SqlEngine.POSTGRES
            sql_plan_renderer = PostgresSQLSqlPlanRenderer()

            def render_bind_parameter_key(self, key: str) -> str:
                return f"%({key})s"

        self.engine = MetricFlowEngine(SemanticManifestLookup(manifest), _Dialect())  # type: ignore[arg-type]
        self.measures = {m["name"]: name for name, sm in self.models.items() for m in sm.get("measures", [])}
        self.metrics = {m["name"]: m for path in project.rglob("*.y*ml")
                        for m in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("metrics", [])
                        if isinstance(m, dict)}

    def sql(self, query: MetricQuery) -> str:
        """MetricFlow's SQL for ``query`` (dimension outputs named as MetricFlow names them)."""
        from metricflow.engine.metricflow_engine import MetricFlowQueryRequest

        base = self._model_of(query.metrics[0])
        names = {d: self._name(base, d, query.grain) for d in query.dimensions}
        where = [self._filter(base, f.dimension, f.op, f.value) for f in query.filters]
        order = [("-" if key.startswith("-") else "") + names.get(key.lstrip("-"), key.lstrip("-"))
                 for key in query.order_by]
        request = MetricFlowQueryRequest.create(metric_names=query.metrics, group_by_names=list(names.values()),
                                                where_constraints=where or None, order_by_names=order or None,
                                                limit=query.limit)
        return str(self.engine.explain(request).sql_statement.sql)

    def _model_of(self, metric: str) -> str:
        spec = self.metrics[metric]
        params = spec.get("type_params", {})
        if spec.get("type") == "simple":
            measure = params["measure"]
            return self.measures[measure if isinstance(measure, str) else measure["name"]]
        first = params.get("numerator") or (params.get("metrics") or [None])[0]
        return self._model_of(first if isinstance(first, str) else first["name"])

    def _path(self, start: str, dimension: str) -> tuple[list[str], dict[str, Any], str]:
        """Entity names from ``start`` to the semantic model holding ``dimension``, that model and its
        primary entity's name."""
        queue: deque[tuple[str, list[str]]] = deque([(start, [])])
        seen = {start}
        while queue:
            name, path = queue.popleft()
            model = self.models[name]
            primary = next(e["name"] for e in model["entities"] if e["type"] == "primary")
            if any(d["name"] == dimension for d in model.get("dimensions", [])):
                return path, model, primary
            for entity in model["entities"]:
                if entity["type"] != "foreign":
                    continue
                target = next((n for n, m in self.models.items() if any(
                    e["name"] == entity["name"] and e["type"] == "primary" for e in m["entities"])), None)
                if target is not None and target not in seen:
                    seen.add(target)
                    queue.append((target, path + [entity["name"]]))
        raise SemanticQueryError(f"MetricFlow: no entity path from {start} to a dimension {dimension!r}")

    def _name(self, base: str, dimension: str, grain: str | None) -> str:
        path, model, primary = self._path(base, dimension)
        entities = path or [primary]
        dim = next(d for d in model["dimensions"] if d["name"] == dimension)
        name = "__".join([*entities, dimension])
        if dim["type"] == "time":
            name += f"__{grain or 'day'}"
        return name

    def _filter(self, base: str, dimension: str, op: str, value: Any) -> str:
        path, model, primary = self._path(base, dimension)
        dim = next(d for d in model["dimensions"] if d["name"] == dimension)
        entities = path or [primary]
        ref = f"{entities[-1]}__{dimension}"
        # a multi-hop path, as MetricFlow's where filters spell it
        hops = f", entity_path={entities[:-1]!r}" if len(entities) > 1 else ""
        left = (f"{{{{ TimeDimension('{ref}', 'day'{hops}) }}}}" if dim["type"] == "time"
                else f"{{{{ Dimension('{ref}'{hops}) }}}}")
        values = value if isinstance(value, list) else [value]
        literal = ", ".join(_literal(v) for v in values)
        if op in ("in", "not in"):
            return f"{left} {op.upper()} ({literal})"
        return f"{left} {op} {literal}"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"
