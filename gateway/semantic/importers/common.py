"""What every importer shares: the error of a source that cannot be read, and how a format's expression is told
to be one column.

A module of its own so that the importers import it, not the package (gateway.semantic.importers), whose
:func:`~gateway.semantic.importers.import_model` imports them.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp


def is_bare_column(text: str) -> bool:
    """Whether a format's expression is one unqualified column (mapped as is) rather than SQL over several."""
    try:
        node = sqlglot.parse_one(text, read="postgres")
    except sqlglot.errors.ParseError:
        return False
    return isinstance(node, exp.Column) and not node.table


class ImportProblem(ValueError):
    """The source cannot be read at all (a missing optional package, a file that is not the format)."""
