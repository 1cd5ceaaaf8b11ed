"""Why an answer is wrong: one reason per item, read off the results (never off the SQL's wording).

Used by the regression replay (:mod:`gateway.magic.replay`) and the ``eval`` report, on top of the one
comparer (:func:`gateway.sql.equivalence.same_result`): the reason is only asked for when that comparer said the
answer differs, and is the first of these that holds, from the coarsest to the finest:

* ``error``: the answer has no result (the SQL failed, no SQL, the time budget spent);
* ``blocked``: the SQL was refused by the current policy (the safety check or a rule);
* ``empty``: no row where the reference has rows;
* ``missing_columns`` / ``extra_columns``: fewer (more) columns than the reference;
* ``missing_rows`` / ``extra_rows``: fewer (more) rows than the reference;
* ``wrong_values``: as many rows and columns, but other values;
* ``order``: the same rows in another order (beyond the ties the reference's sort key allows).

>>> why_wrong(["n"], [[3]], None, columns=["n"], rows=[[3]])
>>> why_wrong(["n"], [[3]], None, columns=["n"], rows=[[4]])
'wrong_values'
>>> why_wrong(["a"], [[1], [2]], None, columns=["a"], rows=[[2], [1]], ordered=True)
'order'
>>> why_wrong(["a"], [[1], [2]], None, columns=["a"], rows=[[1]])
'missing_rows'
>>> why_wrong(["a", "b"], [[1, 2]], None, columns=["a"], rows=[[1]])
'missing_columns'
>>> why_wrong(["a"], [[1]], "exec_error: no such column", columns=None, rows=None)
'error'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.sql.equivalence import same_result

__all__ = ["REASONS", "why_wrong"]

REASONS = ("error", "blocked", "empty", "missing_columns", "extra_columns", "missing_rows", "extra_rows",
           "wrong_values", "order")

# How a refusal by policy reads in an answer's error: the answer's ``blocked`` status, or a problem code of the
# safety check, the rules or the cost gate.
_BLOCKED = {"blocked", "sql_blocked", "cost_too_high"}


def why_wrong(gold_columns: Sequence[Any], gold_rows: Sequence[Sequence[Any]], error: str | None, *,
              columns: Sequence[Any] | None, rows: Sequence[Sequence[Any]] | None, ordered: bool = False,
              order_key: Sequence[int] | None = None, allow_extra_columns: bool = False) -> str | None:
    """None when the answer's result equals the reference's, else the reason it does not (module docstring).

    ``error`` is the answer's error text (a problem code first), when it has no result.
    """
    if columns is None or rows is None:
        code = (error or "").split(":", 1)[0].strip().lower()
        return "blocked" if code in _BLOCKED else "error"
    if same_result(gold_columns, gold_rows, columns, rows, ordered=ordered, order_key=order_key,
                   allow_extra_columns=allow_extra_columns):
        return None
    if not rows and gold_rows:
        return "empty"
    if len(columns) < len(gold_columns):
        return "missing_columns"
    if len(columns) > len(gold_columns) and not allow_extra_columns:
        return "extra_columns"
    if len(rows) < len(gold_rows):
        return "missing_rows"
    if len(rows) > len(gold_rows):
        return "extra_rows"
    if ordered and same_result(gold_columns, gold_rows, columns, rows, ordered=False,
                               allow_extra_columns=allow_extra_columns):
        return "order"
    return "wrong_values"
