"""A semantic model against the live schema: every table, key and column it names must exist.

Pure (the schema comes in introspected); ``semantic check`` runs it when the database is configured. A
measure's expression and a filter are read with sqlglot for their column names.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from gateway.execute.introspect import Schema
from gateway.semantic.loading import SemanticProblem, Where
from gateway.semantic.model import SemanticModel


def schema_problems(model: SemanticModel, schema: Schema, line: Where) -> list[SemanticProblem]:
    """``file:line`` problems for each table, key and column of ``model`` that ``schema`` lacks."""
    out: list[SemanticProblem] = []

    def problem(where: tuple[str, int], message: str) -> None:
        out.append(SemanticProblem(where[0], where[1], message))

    for name, entity in model.entities.items():
        table = schema.table(entity.table)
        if table is None:
            problem(line("entities", name, "table"), f"entity {name}: table {entity.table!r} does not exist")
            continue
        columns = {c.name.lower() for c in table.columns}

        def missing(text: str, columns: set[str] = columns) -> list[str]:
            try:
                tree = sqlglot.parse_one(text, read="postgres")
            except sqlglot.errors.ParseError:
                return []  # reported by the model's own check
            return sorted({c.name for c in tree.find_all(exp.Column) if c.name.lower() not in columns})

        if _is_plain(entity.primary_key) and entity.primary_key.lower() not in columns:
            problem(line("entities", name, "primary_key"),
                    f"entity {name}: key column {table.name}.{entity.primary_key} does not exist")
        for i, rel in enumerate(entity.relationships):
            if rel.foreign_key.lower() not in columns:
                problem(line("entities", name, "relationships", i),
                        f"entity {name}: foreign key column {table.name}.{rel.foreign_key} does not exist")
        for dname, dim in entity.dimensions.items():
            if (dim.column or dname).lower() not in columns:
                problem(line("entities", name, "dimensions", dname),
                        f"dimension {dname}: column {table.name}.{dim.column or dname} does not exist")
        for mname, measure in entity.measures.items():
            for column in missing(measure.expr):
                problem(line("entities", name, "measures", mname, "expr"),
                        f"measure {name}.{mname}: column {table.name}.{column} does not exist")
    for mname, metric in model.metrics.items():
        found = model.measure(metric.measure or "") if metric.filter else None
        if found is None or metric.filter is None:
            continue
        table = schema.table(model.entities[found[0]].table)
        names = {c.name.lower() for c in table.columns} if table is not None else set()
        for column in sorted({c.name for c in sqlglot.parse_one(metric.filter, read="postgres").find_all(exp.Column)}):
            if table is not None and column.lower() not in names:
                problem(line("metrics", mname, "filter"),
                        f"metric {mname}: filter column {table.name}.{column} does not exist")
    return out


def _is_plain(text: str) -> bool:
    return text.replace("_", "").isalnum()
