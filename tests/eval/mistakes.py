"""The usual mistakes of a text-to-SQL model, made to a reference SQL on its tree (for measuring recall).

Each function returns the reference with one mistake, or None when the SQL offers no place for it:

* ``missing_filter``: the outermost WHERE dropped (the model forgot a condition);
* ``always_false``: the first string literal compared with ``=`` in the WHERE spelt in capitals (a value
  no row holds, as a model guessing a label's case writes it);
* ``wrong_aggregate``: the first aggregate swapped (sum <-> avg, min <-> max, count(x) -> count(DISTINCT x),
  count(*) -> count of distinct values of the first grouped or selected column);
* ``off_by_one_limit``: LIMIT n -> LIMIT n + 1.

>>> missing_filter("SELECT count(*) FROM t WHERE a = 1")
'SELECT COUNT(*) FROM t'
>>> always_false("SELECT count(*) FROM t WHERE status = 'returned'")
"SELECT COUNT(*) FROM t WHERE status = 'RETURNED'"
>>> wrong_aggregate("SELECT sum(x) FROM t")
'SELECT AVG(x) FROM t'
>>> off_by_one_limit("SELECT a FROM t ORDER BY a LIMIT 3")
'SELECT a FROM t ORDER BY a LIMIT 4'
"""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp

__all__ = ["MISTAKES", "always_false", "missing_filter", "off_by_one_limit", "wrong_aggregate"]


def _tree(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="postgres")


def missing_filter(sql: str) -> str | None:
    tree = _tree(sql)
    if not tree.args.get("where"):
        return None
    tree.set("where", None)
    return tree.sql("postgres")


def always_false(sql: str) -> str | None:
    tree = _tree(sql)
    where = tree.args.get("where")
    if where is None:
        return None
    for eq in where.find_all(exp.EQ):
        literal = eq.expression
        if isinstance(literal, exp.Literal) and literal.is_string and literal.this.upper() != literal.this:
            eq.set("expression", exp.Literal.string(literal.this.upper()))
            return tree.sql("postgres")
    return None


def wrong_aggregate(sql: str) -> str | None:
    tree = _tree(sql)
    swaps: dict[type[exp.Expression], type[exp.Expression]] = {exp.Sum: exp.Avg, exp.Avg: exp.Sum,
                                                               exp.Min: exp.Max, exp.Max: exp.Min}
    for node in tree.find_all(exp.AggFunc):
        if type(node) in swaps:
            node.replace(swaps[type(node)](this=node.this.copy()))
            return tree.sql("postgres")
        if isinstance(node, exp.Count):
            arg = node.this
            if isinstance(arg, exp.Distinct):
                continue
            if isinstance(arg, exp.Star) or arg is None:
                group = tree.args.get("group")
                column = group.expressions[0] if group and group.expressions else next(tree.find_all(exp.Column), None)
                if column is None:
                    continue
                arg = column
            node.replace(exp.Count(this=exp.Distinct(expressions=[arg.copy()])))
            return tree.sql("postgres")
    return None


def off_by_one_limit(sql: str) -> str | None:
    tree = _tree(sql)
    limit = tree.args.get("limit")
    value = limit.args.get("expression") if isinstance(limit, exp.Limit) else None
    if not (isinstance(value, exp.Literal) and value.is_int):
        return None
    return tree.limit(int(value.this) + 1).sql("postgres")


MISTAKES: dict[str, Callable[[str], str | None]] = {
    "missing_filter": missing_filter, "always_false": always_false, "wrong_aggregate": wrong_aggregate,
    "off_by_one_limit": off_by_one_limit,
}
