"""Read semantic models from the formats teams already have into the one :class:`SemanticModel`.

Each importer reads its format's own files and maps the constructs our model has (entities and their keys
and relationships, dimensions with time grains, measures, simple/ratio/derived metrics, synonyms, filters,
descriptions, verified queries); what has no counterpart is reported as a warning with its file and line
rather than dropped silently. The result is checked like a native file (:func:`~gateway.semantic.loading.
validate`), so an import that would not load says so.
"""

from __future__ import annotations

from pathlib import Path

import sqlglot
from sqlglot import exp

from gateway.semantic.loading import SemanticProblem, load_model, validate
from gateway.semantic.model import SemanticModel


def is_bare_column(text: str) -> bool:
    """Whether a format's expression is one unqualified column (mapped as is) rather than SQL over several."""
    try:
        node = sqlglot.parse_one(text, read="postgres")
    except sqlglot.errors.ParseError:
        return False
    return isinstance(node, exp.Column) and not node.table


class ImportProblem(ValueError):
    """The source cannot be read at all (a missing optional package, a file that is not the format)."""


def import_model(source: Path, fmt: str) -> tuple[SemanticModel, list[SemanticProblem]]:
    """``source`` (a file or folder) in format ``fmt`` (native, dbt, cube, cortex) as a model + problems."""
    if fmt == "native":
        files = sorted(source.rglob("*.y*ml")) if source.is_dir() else [source]
        return load_model(files)
    if fmt == "dbt":
        from gateway.semantic.importers.dbt import read_dbt as reader
    elif fmt == "cube":
        from gateway.semantic.importers.cube import read_cube as reader
    elif fmt == "cortex":
        from gateway.semantic.importers.cortex import read_cortex as reader
    else:
        raise ImportProblem(f"unknown format {fmt!r}")
    model, problems = reader(source)
    return model, problems + validate(model, lambda *_: (str(source), 0))
