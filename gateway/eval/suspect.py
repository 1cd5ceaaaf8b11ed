"""Suspect references: a verified SQL whose own answer cannot be trusted today is not held against a change.

A regression is "right before, wrong now" measured against the reference (the verified SQL's result now).
When the reference itself is doubtful, a difference says nothing about the change, so the item is flagged
with one of these and left out of the count:

* ``reference_blocked``: the current policy (safety check and rules) refuses the reference SQL;
* ``reference_failed``: the reference SQL no longer runs (schema changed) or hits the row cap;
* ``reference_empty``: it returns no row now (its data moved or was deleted);
* ``nondeterministic``: a top-level LIMIT without ORDER BY, or one whose sort key ties across the limit
  (the rows kept depend on the plan);
* ``time_dependent``: it reads the clock (``now()``, ``current_date`` ...), so its answer moves with time.

Each is read off the SQL's tree, the policy or the result itself, never off the question's wording.

>>> reads_clock("SELECT count(*) FROM orders WHERE ordered_at > now() - interval '30 days'")
True
>>> reads_clock("SELECT count(*) FROM orders")
False
>>> limit_of("SELECT a FROM t ORDER BY a LIMIT 3"), limit_of("SELECT a FROM t")
(3, None)
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from gateway import safety

__all__ = ["SUSPECTS", "limit_of", "reads_clock", "suspect_reason"]

SUSPECTS = ("reference_blocked", "reference_failed", "reference_empty", "nondeterministic", "time_dependent")

_CLOCK_NODES = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.Localtimestamp, exp.Localtime)
_CLOCK_FUNCTIONS = {"clock_timestamp", "statement_timestamp", "transaction_timestamp", "timeofday", "now"}


def _tree(sql: str) -> exp.Expression | None:
    try:
        parsed = [s for s in sqlglot.parse(sql, read="postgres") if isinstance(s, exp.Expression)]
    except sqlglot.errors.SqlglotError:
        return None
    return parsed[0] if len(parsed) == 1 else None


def reads_clock(sql: str) -> bool:
    """True when the statement reads the clock anywhere (its answer depends on when it runs)."""
    tree = _tree(sql)
    if tree is None:
        return False
    for node in tree.walk():
        if isinstance(node, _CLOCK_NODES):
            return True
        if isinstance(node, exp.Anonymous) and str(node.name).lower() in _CLOCK_FUNCTIONS:
            return True
    return False


def limit_of(sql: str) -> int | None:
    """The outermost query's LIMIT when it is a literal number, else None."""
    tree = _tree(sql)
    limit = tree.args.get("limit") if isinstance(tree, exp.Query) else None
    value = limit.args.get("expression") if isinstance(limit, exp.Limit) else None
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


def widened(sql: str, limit: int) -> str | None:
    """The statement with its outermost LIMIT raised by one (to see the row the limit cut), or None."""
    tree = _tree(sql)
    if not isinstance(tree, exp.Query):
        return None
    return tree.limit(limit + 1).sql("postgres")


def is_ordered(sql: str) -> bool:
    tree = _tree(sql)
    return bool(tree is not None and tree.args.get("order"))


def policy_refuses(policy: Any, sql: str) -> bool:
    return not safety.check(sql, policy).allowed


def suspect_reason(*, blocked: bool, failed: str | None, rows: list[list[Any]] | None, sql: str,
                   tie_across_limit: bool) -> str | None:
    """The first suspect reason that holds for a reference (None: the reference can be trusted).

    ``tie_across_limit``: the row just past the LIMIT sorts equal to the last row kept (see :func:`limit_of`).

    >>> suspect_reason(blocked=False, failed=None, rows=[[1]], sql="SELECT a FROM t LIMIT 1", tie_across_limit=False)
    'nondeterministic'
    >>> suspect_reason(blocked=False, failed=None, rows=[[1]], sql="SELECT a FROM t ORDER BY a LIMIT 1",
    ...                tie_across_limit=False) is None
    True
    """
    if blocked:
        return "reference_blocked"
    if failed is not None or rows is None:
        return "reference_failed"
    if not rows:
        return "reference_empty"
    limit = limit_of(sql)
    if limit is not None and len(rows) >= limit and (not is_ordered(sql) or tie_across_limit):
        return "nondeterministic"
    if reads_clock(sql):
        return "time_dependent"
    return None
