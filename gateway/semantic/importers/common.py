"""What every importer shares: the error of a source that cannot be read (whether an expression is one column
is :func:`gateway.semantic.loading.is_bare_column`, which the model's own checks use too).

A module of its own so that the importers import it, not the package (gateway.semantic.importers), whose
:func:`~gateway.semantic.importers.import_model` imports them.
"""

from __future__ import annotations


class ImportProblem(ValueError):
    """The source cannot be read at all (a missing optional package, a file that is not the format)."""
