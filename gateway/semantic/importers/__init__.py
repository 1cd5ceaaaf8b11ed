"""Read semantic models from the formats teams already have into the one :class:`SemanticModel`.

Each importer reads its format's own files and maps the constructs our model has (entities and their keys
and relationships, dimensions with time grains, measures, simple/ratio/derived metrics, synonyms, filters,
descriptions, verified queries); what has no counterpart is reported as a warning with its file and line
rather than dropped silently. The result is checked like a native file (:func:`~gateway.semantic.loading.
validate`), so an import that would not load says so.
"""

from __future__ import annotations

from pathlib import Path

from gateway.semantic.importers.common import ImportProblem
from gateway.semantic.importers.cortex import read_cortex
from gateway.semantic.importers.cube import read_cube
from gateway.semantic.importers.dbt import read_dbt
from gateway.semantic.loading import SemanticProblem, load_model, validate
from gateway.semantic.model import SemanticModel

__all__ = ["ImportProblem", "import_model"]

READERS = {"dbt": read_dbt, "cube": read_cube, "cortex": read_cortex}


def import_model(source: Path, fmt: str) -> tuple[SemanticModel, list[SemanticProblem]]:
    """``source`` (a file or folder) in format ``fmt`` (native, dbt, cube, cortex) as a model + problems."""
    if fmt == "native":
        files = sorted(source.rglob("*.y*ml")) if source.is_dir() else [source]
        return load_model(files)
    reader = READERS.get(fmt)
    if reader is None:
        raise ImportProblem(f"unknown format {fmt!r}")
    model, problems = reader(source)
    return model, problems + validate(model, lambda *_: (str(source), 0))
