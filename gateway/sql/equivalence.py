"""Execution equivalence: do two query results say the same thing?

Used by the evaluation harness (execution accuracy, EX) and by MAGIC's manager (does a revised SQL now
return what the gold SQL returns?). Both sides are results as the gateway hands them out: a list of
columns and rows of JSON values (``numeric`` arrives as an exact decimal *string*, see
:mod:`gateway.execute.values`).

The rules, in the order they are applied:

* **Cells.** ``NULL`` equals ``NULL``. Numbers compare by value whatever their JSON form: ``3``, ``3.0``
  and ``"3.00"`` are equal. Non-integral numbers are rounded to 6 significant digits first (integral digits
  are never rounded away, so counts and ids stay exact), which absorbs float noise such as
  ``0.30000000000000004``. A string that reads as a plain decimal number counts as that number (a text
  column holding ``"007"`` therefore equals one holding ``"7"``; rare, and the price of comparing
  ``numeric`` strings with floats). Booleans are not numbers: ``true`` differs from ``1``. Everything else
  (text, ISO dates, JSON documents, arrays) compares by value.
* **Rows** form a multiset: duplicates count, so ``[[1], [1]]`` differs from ``[[1]]``.
* **Order** is compared only when ``ordered`` is true (the gold has a top-level ``ORDER BY``, see
  :func:`gold_is_ordered`); then the rows must appear in the same sequence, modulo ties: with
  ``order_key`` (the gold's output columns its ORDER BY sorts on, see :func:`order_key_columns`), rows the
  gold's sort key does not tell apart may come in any order among themselves, as the database is free to
  return them. When the sort key is not among the gold's outputs, ties cannot be seen and the whole
  sequence must match.
* **Column names** are ignored.
* **Column order.** A prediction whose columns are a permutation of the gold's is accepted when *some*
  permutation makes the rows equal: ``SELECT name, total`` answers the same question as
  ``SELECT total, name``. Because the whole rows must match under one mapping, this never pairs values
  that were not on the same row.
* **Extra columns** are accepted only with ``allow_extra_columns``: then the gold's columns must map
  one-to-one onto a subset of the prediction's columns (in any order) and the projected rows must be equal.
  Without it the column counts must match.

>>> same_result(["n"], [[1], [2]], ["count"], [["2"], [1.0]], ordered=False)
True
>>> same_result(["a", "b"], [[1, "x"]], ["b", "a"], [["x", 1]], ordered=False)
True
>>> same_result(["a"], [[1]], ["a", "b"], [[1, "x"]], ordered=False)
False
>>> same_result(["a"], [[1]], ["a", "b"], [[1, "x"]], ordered=False, allow_extra_columns=True)
True
>>> gold_is_ordered("SELECT name FROM t ORDER BY name")
True
>>> gold_is_ordered("SELECT name FROM (SELECT name FROM t ORDER BY name) s")
False
"""

from __future__ import annotations

import decimal
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import sqlglot
from sqlglot import exp

__all__ = ["asks_for_order", "gold_is_ordered", "normalize_cell", "order_key_columns", "same_result",
           "same_result_bird", "same_result_defog"]

SIGNIFICANT_DIGITS = 6
# Bound on the column mappings tried before giving up: identical columns (say, all NULL) could otherwise
# make the search factorial. Real results match or fail within a handful of tries.
MAX_MAPPINGS = 5000

# A plain decimal literal, the way Postgres prints numeric and the way JSON writes numbers. Deliberately
# narrow: no thousands separators, no "NaN", no surrounding spaces.
_DECIMAL_TEXT = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")

Cell = Any
Key = tuple[Any, ...]


def normalize_cell(value: Any) -> Key:
    """A hashable key such that two cells are equal exactly when their keys are.

    >>> normalize_cell("12.50") == normalize_cell(12.5) == normalize_cell(decimal.Decimal("12.5000001"))
    True
    >>> normalize_cell(None) == normalize_cell("NULL")
    False
    """
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("num", _number_key(decimal.Decimal(value)))
    if isinstance(value, float):
        if not math.isfinite(value):
            return ("str", str(value))  # the gateway writes non-finite floats as their text
        return ("num", _number_key(decimal.Decimal(repr(value))))
    if isinstance(value, decimal.Decimal):
        return ("num", _number_key(value)) if value.is_finite() else ("str", str(value))
    if isinstance(value, str):
        if _DECIMAL_TEXT.fullmatch(value):
            return ("num", _number_key(decimal.Decimal(value)))
        return ("str", value)
    if isinstance(value, (list, tuple)):
        return ("list", tuple(normalize_cell(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((str(k), normalize_cell(v)) for k, v in value.items()), key=repr)))
    return ("str", str(value))


def _number_key(number: decimal.Decimal) -> str:
    """Canonical text of a number: integral values exact, others to 6 significant digits."""
    if number == 0:
        return "0"
    if number == number.to_integral_value():
        return str(int(number))
    # Keep every integral digit, and at least 6 significant ones.
    exponent = min(number.adjusted() - (SIGNIFICANT_DIGITS - 1), 0)
    with decimal.localcontext() as ctx:
        ctx.prec = max(number.adjusted() + 1, 0) + 40
        rounded = number.quantize(decimal.Decimal(1).scaleb(exponent), rounding=decimal.ROUND_HALF_EVEN)
    if rounded == rounded.to_integral_value():
        return str(int(rounded))
    return format(rounded.normalize(), "f")


def same_result(
    gold_columns: Sequence[Any],
    gold_rows: Sequence[Sequence[Cell]],
    pred_columns: Sequence[Any],
    pred_rows: Sequence[Sequence[Cell]],
    *,
    ordered: bool,
    allow_extra_columns: bool = False,
    order_key: Sequence[int] | None = None,
) -> bool:
    """True when the prediction's result equals the gold's under the rules in the module docstring.

    >>> same_result(["k", "n"], [["a", 2], ["b", 2], ["c", 1]], ["k", "n"], [["b", 2], ["a", 2], ["c", 1]],
    ...             ordered=True, order_key=[1])
    True
    >>> same_result(["k", "n"], [["a", 2], ["b", 2], ["c", 1]], ["k", "n"], [["b", 2], ["a", 2], ["c", 1]],
    ...             ordered=True)
    False

    ``*_columns`` only contribute their count (names are ignored), so they may be names, column objects or
    dicts. Rows are sequences of JSON values.
    """
    n_gold, n_pred = len(gold_columns), len(pred_columns)
    if n_pred < n_gold or (n_pred > n_gold and not allow_extra_columns):
        return False
    if len(gold_rows) != len(pred_rows):
        return False
    gold = [tuple(normalize_cell(c) for c in row) for row in gold_rows]
    pred = [tuple(normalize_cell(c) for c in row) for row in pred_rows]
    if any(len(r) != n_gold for r in gold) or any(len(r) != n_pred for r in pred):
        raise ValueError("a row's length differs from its column count")

    blocks = _tie_blocks(gold, order_key) if ordered and order_key else None
    gold_shape = _shape(gold, ordered, blocks)
    for mapping in _candidate_mappings(gold, pred, n_gold, n_pred):
        projected = [tuple(row[j] for j in mapping) for row in pred]
        if _shape(projected, ordered, blocks) == gold_shape:
            return True
    return False


def _shape(rows: list[Key], ordered: bool, blocks: list[int] | None = None) -> object:
    """Rows as a multiset, a sequence, or (ties) a sequence of multisets cut where the gold's key changes."""
    if not ordered:
        return Counter(rows)
    if blocks is None:
        return rows
    return [Counter(rows[start:end]) for start, end in zip([0, *blocks], [*blocks, len(rows)], strict=True)]


def _tie_blocks(gold: list[Key], order_key: Sequence[int]) -> list[int] | None:
    """Where the gold's sort key changes value (row indexes), or None when a key column is out of range."""
    if any(not 0 <= i < (len(gold[0]) if gold else 0) for i in order_key):
        return None
    keys = [tuple(row[i] for i in order_key) for row in gold]
    return [n for n in range(1, len(keys)) if keys[n] != keys[n - 1]]


def _candidate_mappings(gold: list[Key], pred: list[Key], n_gold: int, n_pred: int) -> Iterator[tuple[int, ...]]:
    """Injective maps gold column -> prediction column under which the columns' value multisets agree.

    Identity (the prediction's first columns, in order) comes first; comparing each column's multiset of
    values prunes nearly every wrong pairing before whole rows are compared.
    """
    gold_cols = [Counter(row[i] for row in gold) for i in range(n_gold)]
    pred_cols = [Counter(row[j] for row in pred) for j in range(n_pred)]
    candidates = [[j for j in _preferring(i, n_pred) if pred_cols[j] == gold_cols[i]] for i in range(n_gold)]
    if any(not c for c in candidates):
        return
    tried = 0
    chosen: list[int] = []
    used: set[int] = set()

    def search(i: int) -> Iterator[tuple[int, ...]]:
        nonlocal tried
        if i == n_gold:
            tried += 1
            yield tuple(chosen)
            return
        for j in candidates[i]:
            if j in used or tried >= MAX_MAPPINGS:
                continue
            chosen.append(j)
            used.add(j)
            yield from search(i + 1)
            chosen.pop()
            used.discard(j)

    yield from search(0)


def _preferring(i: int, n: int) -> list[int]:
    return [i, *(j for j in range(n) if j != i)] if i < n else list(range(n))


# defog sql-eval's own cue for "the question asks for an order" (eval/eval.py, normalize_table)
_ORDER_WORDS = re.compile(r"\b(order|sort|arrange)\b", re.IGNORECASE)


def asks_for_order(question: str) -> bool:
    """defog sql-eval's test: the question itself says order, sort or arrange.

    >>> asks_for_order("List the regions, highest revenue first"), asks_for_order("Sort regions by revenue")
    (False, True)
    """
    return bool(_ORDER_WORDS.search(question))


def same_result_defog(gold_columns: Sequence[Any], gold_rows: Sequence[Sequence[Cell]], pred_columns: Sequence[Any],
                      pred_rows: Sequence[Sequence[Cell]], *, ordered: bool,
                      order_key: Sequence[int] | None = None) -> bool:
    """defog sql-eval's convention: duplicate rows dropped on both sides, row order compared only when
    ``ordered`` (pass the gold's ORDER BY *and* :func:`asks_for_order` of the question), and extra columns
    allowed: the gold's columns need only match a subset of the prediction's.

    >>> same_result_defog(["a"], [[1], [2]], ["a", "b"], [[2, "y"], [1, "x"], [1, "x"]], ordered=False)
    True
    """
    return same_result(gold_columns, _unique(gold_rows), pred_columns, _unique(pred_rows), ordered=ordered,
                       allow_extra_columns=True, order_key=order_key)


def same_result_bird(gold_rows: Sequence[Sequence[Cell]], pred_rows: Sequence[Sequence[Cell]]) -> bool:
    """BIRD's convention (``set(predicted) == set(ground_truth)``): rows as a *set* of tuples, columns in
    their order, no extra columns; cells compare as in :func:`same_result`.

    >>> same_result_bird([[1, "x"]], [[1, "x"], [1.0, "x"]]), same_result_bird([[1, "x"]], [["x", 1]])
    (True, False)
    """
    return {tuple(normalize_cell(c) for c in r) for r in gold_rows} == \
        {tuple(normalize_cell(c) for c in r) for r in pred_rows}


def _unique(rows: Sequence[Sequence[Cell]]) -> list[Sequence[Cell]]:
    seen: set[Key] = set()
    out = []
    for row in rows:
        key = tuple(normalize_cell(c) for c in row)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def order_key_columns(sql: str) -> list[int] | None:
    """The output columns (0-based) the outermost ORDER BY sorts on, or None when it has none or a key is not
    an output (by position, output name or the same expression).

    >>> order_key_columns("SELECT name, count(*) AS n FROM t GROUP BY name ORDER BY n DESC")
    [1]
    >>> order_key_columns("SELECT name, count(*) FROM t GROUP BY name ORDER BY count(*) DESC, 1")
    [1, 0]
    >>> order_key_columns("SELECT name FROM t ORDER BY created_at") is None
    True
    """
    node = _outermost(sql)
    if node is None or not node.args.get("order"):
        return None
    outputs = list(node.selects)
    names = [o.alias_or_name.lower() for o in outputs]
    shapes = [(o.unalias() if isinstance(o, exp.Alias) else o).sql("postgres").lower() for o in outputs]
    out: list[int] = []
    for ordered in node.args["order"].expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(outputs):
            out.append(int(key.this) - 1)
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
            out.append(names.index(key.name.lower()))
        elif key.sql("postgres").lower() in shapes:
            out.append(shapes.index(key.sql("postgres").lower()))
        else:
            return None
    return out


def _outermost(sql: str) -> exp.Query | None:
    try:
        statements = sqlglot.parse(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return None
    parsed = [s for s in statements if isinstance(s, exp.Expression)]
    if len(parsed) != 1:
        return None
    node = parsed[0]
    while isinstance(node, (exp.Subquery, exp.Paren)) and not node.args.get("order"):
        inner = node.this
        if not isinstance(inner, exp.Expression):
            return None
        node = inner
    return node if isinstance(node, exp.Query) else None


def gold_is_ordered(sql: str) -> bool:
    """True when the statement's outermost query has an ``ORDER BY`` (so its row order is part of the answer).

    ORDER BY inside subqueries, CTEs or window definitions does not count. SQL that does not parse is
    treated as unordered (it will fail to execute anyway).

    >>> gold_is_ordered("WITH x AS (SELECT 1 AS a) SELECT a FROM x ORDER BY a DESC")
    True
    >>> gold_is_ordered("SELECT a, rank() OVER (ORDER BY a) FROM t")
    False
    >>> gold_is_ordered("SELECT a FROM t UNION SELECT a FROM u ORDER BY 1")
    True
    """
    try:
        statements = sqlglot.parse(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return False
    parsed = [s for s in statements if isinstance(s, exp.Expression)]
    if len(parsed) != 1:
        return False
    node = parsed[0]
    while isinstance(node, (exp.Subquery, exp.Paren)) and not node.args.get("order"):
        inner = node.this
        if not isinstance(inner, exp.Expression):
            return False
        node = inner
    return bool(node.args.get("order"))
