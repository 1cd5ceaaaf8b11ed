"""What the structure of an executed SQL says about the shape of its result, read from sqlglot's tree.

The result checks (:mod:`gateway.pipeline.validate`) ask the SQL, not the text: does the query that makes
the result rows collapse everything into one row (an aggregate without ``GROUP BY``), does it group, does it
filter, which result columns are aggregates, which come only from the nullable side of an outer join. A
statement sqlglot cannot read gets ``None`` from :func:`shape_of_sql`, and the checks that need the
structure stay silent (precision first: a finding on a right answer costs a reflection).

>>> s = shape_of_sql("SELECT count(*) FROM orders WHERE status = 'x'")
>>> (s.collapses, s.groups, s.filtered, s.aggregate_columns)
(True, False, True, (True,))
>>> shape_of_sql("SELECT month, sum(x) FROM t GROUP BY month").collapses
False
>>> shape_of_sql("SELECT total FROM (SELECT sum(x) AS total FROM t) s").collapses
True
>>> shape_of_sql("SELECT a, sum(x) OVER (PARTITION BY a) FROM t").collapses
False
>>> shape_of_sql("SELECT o.id, p.amount FROM orders o LEFT JOIN payments p ON p.order_id = o.id").outer_nullable
(False, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

__all__ = ["SqlShape", "shape_of_sql"]


@dataclass(frozen=True, slots=True)
class SqlShape:
    """Facts about the SELECT that produces the result rows (``None`` in a tuple: unknown)."""

    collapses: bool            # an aggregate without GROUP BY: exactly one row, whatever the data holds
    groups: bool               # GROUP BY (or DISTINCT ON / window partition) in the row-producing SELECT
    dedupes: bool              # DISTINCT or GROUP BY: the result cannot hold duplicate rows by construction
    filtered: bool             # a WHERE or HAVING anywhere, or INTERSECT / EXCEPT: rows can match nothing
    aggregate_columns: tuple[bool, ...] | None  # per result column: an aggregate of the rows (None with *)
    outer_nullable: tuple[bool, ...] | None     # per result column: reads only outer-join-nullable tables


SHAPE_CACHE_ENTRIES = 1024
SHAPE_CACHE_MAX_CHARS = 16_384  # long one-off statements are not worth the memory


def shape_of_sql(sql: str) -> SqlShape | None:
    """The shape of ``sql``'s result, or None when sqlglot cannot read it or it is not one query.

    A pure function of the text (no database, rules or principal in it), so recent answers are kept: the
    parse is the costliest part of validating a result, and dashboards and retried questions send the same
    SQL again. The shape is immutable, so sharing one between requests shares nothing mutable.
    """
    if len(sql) > SHAPE_CACHE_MAX_CHARS:
        return _shape(sql)
    return _cached_shape(sql)


def _shape(sql: str) -> SqlShape | None:
    try:
        statements = [s for s in sqlglot.parse(sql, read="postgres") if s is not None]
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    if len(statements) != 1:
        return None
    tree = statements[0]
    filtered = any(True for _ in tree.find_all(exp.Where, exp.Having, exp.Intersect, exp.Except))
    select = _row_source(tree)
    if select is None:
        return SqlShape(False, False, False, filtered, None, None)
    grouped = bool(select.args.get("group"))
    distinct = bool(select.args.get("distinct"))
    aggregates = tuple(_is_aggregate(p) for p in select.expressions)
    star = any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
               for p in select.expressions)
    collapses = not grouped and any(aggregates)
    return SqlShape(
        collapses=collapses,
        groups=grouped or _partitions(select),
        dedupes=grouped or distinct or collapses,
        filtered=filtered,
        aggregate_columns=None if star else aggregates,
        outer_nullable=None if star else _outer_nullable(select),
    )


_cached_shape = lru_cache(maxsize=SHAPE_CACHE_ENTRIES)(_shape)


def _row_source(tree: Any) -> exp.Select | None:
    """The SELECT whose rows are the result: through parentheses, and through a plain projection of a
    single derived table or CTE (``SELECT x FROM (SELECT sum(a) AS x FROM t) s`` is that inner aggregate)."""
    node: Any = tree
    while isinstance(node, (exp.Subquery, exp.Paren)):
        node = node.this
    if not isinstance(node, exp.Select):
        return None  # a set operation, VALUES ...: no single row source
    ctes = {cte.alias_or_name: cte.this for cte in (node.args.get("with_") or exp.With()).expressions}
    for _ in range(10):  # derived tables nest; a bound keeps a pathological tree cheap
        if node.args.get("group") or node.args.get("distinct") or node.args.get("joins") \
                or any(_is_aggregate(p) for p in node.expressions):
            return node if isinstance(node, exp.Select) else None
        source = node.args.get("from_")
        inner = source.this if source is not None else None
        if isinstance(inner, exp.Subquery) and isinstance(inner.this, exp.Select):
            node = inner.this
        elif isinstance(inner, exp.Table) and not inner.db and inner.name in ctes \
                and isinstance(ctes[inner.name], exp.Select):
            node = ctes.pop(inner.name)  # popped: a CTE cannot lead back to itself
        else:
            return node if isinstance(node, exp.Select) else None
    return node if isinstance(node, exp.Select) else None


def _is_aggregate(projection: Any) -> bool:
    """An aggregate function over the SELECT's rows (not a window function, not inside a subquery)."""
    for agg in projection.find_all(exp.AggFunc):
        node: Any = agg
        while node is not projection and node.parent is not None \
                and not isinstance(node.parent, (exp.Window, exp.Subquery, exp.Select)):
            node = node.parent
        if node is projection:
            return True
    return False


def _partitions(select: exp.Select) -> bool:
    return any(w.args.get("partition_by") for p in select.expressions for w in p.find_all(exp.Window))


def _outer_nullable(select: exp.Select) -> tuple[bool, ...]:
    """Per projection: every column it reads comes from a table on the nullable side of an outer join."""
    nullable: set[str] = set()
    source = select.args.get("from_")
    left_names = {source.this.alias_or_name} if source is not None else set()
    for join in select.args.get("joins") or []:
        name = join.this.alias_or_name
        side = (join.side or "").upper()
        if side in ("LEFT", "FULL"):
            nullable.add(name)
        if side in ("RIGHT", "FULL"):
            nullable |= left_names
        left_names.add(name)
    out = []
    for projection in select.expressions:
        tables = {c.table for c in projection.find_all(exp.Column)}
        out.append(bool(nullable) and bool(tables) and "" not in tables and tables <= nullable
                   and not _is_aggregate(projection))
    return tuple(out)
