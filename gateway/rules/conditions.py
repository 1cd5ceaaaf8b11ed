"""Required conditions: does every read of a table carry the DBA's predicate?

Read on the syntax tree (sqlglot scopes), never with regular expressions. For each SELECT scope that reads the
table (in FROM or a JOIN; a CTE or subquery is its own scope and needs its own filter), the predicate must be
implied by one top-level AND conjunct of that scope's WHERE, of the table's own JOIN ... ON, or of an inner
JOIN's ON. A conjunct under OR does not count (``status <> 'cancelled' OR true`` filters nothing). Column
references must name the table's alias (``o.status``), the table itself, or nothing.

What counts as implying a required predicate over one column and literals:

- ``status <> 'cancelled'`` is met by ``status != 'cancelled'``, ``NOT status = 'cancelled'``,
  ``'cancelled' <> status``, ``status IS DISTINCT FROM 'cancelled'``, ``status NOT IN ('cancelled', ...)``,
  ``status <> ALL (ARRAY['cancelled', ...])`` and by any positive filter whose values exclude it:
  ``status = 'shipped'``, ``status IN ('shipped', 'delivered')``, ``status = ANY (ARRAY[...])``;
- ``status IN ('a', 'b')`` is met by a positive filter on a subset of those values;
- a boolean column ``is_active`` is met by ``is_active``, ``is_active = true`` or ``is_active IS TRUE``;
- anything else (ranges, expressions, ORs) must match the required predicate's normalized form exactly
  (qualifiers dropped, comparison flipped so the column is on the left).

A derived table or CTE that passes the needed columns through unchanged (``SELECT *`` or the bare columns)
may instead be filtered where it is used: ``SELECT ... FROM (SELECT * FROM orders) o WHERE o.status <> ...``.

>>> from gateway.rules.model import RequiredCondition
>>> rule = RequiredCondition("exclude_cancelled", "orders", "status <> 'cancelled'", "")
>>> [c.name for c in missing_conditions("SELECT count(*) FROM orders", [rule])]
['exclude_cancelled']
>>> missing_conditions("SELECT count(*) FROM orders o WHERE NOT o.status = 'cancelled'", [rule])
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from gateway.rules.model import RequiredCondition

Value = tuple[str, object]


def parse_predicate(sql: str) -> exp.Expr:
    """The required predicate as a tree; ValueError when it is not a boolean condition."""
    try:
        tree = sqlglot.condition(sql, dialect="postgres")
    except SqlglotError as exc:
        raise ValueError(f"cannot parse the condition: {exc}") from exc
    if isinstance(tree, (exp.Query, exp.Literal)) or not tree.find(exp.Column):
        raise ValueError("the condition must be a predicate over the table's columns, e.g. status <> 'x'")
    return tree


def predicate_columns(sql: str) -> set[str]:
    """Column names (lower case) the predicate reads."""
    return {c.name.lower() for c in parse_predicate(sql).find_all(exp.Column)}


def missing_conditions(sql: str, conditions: Sequence[RequiredCondition]) -> list[RequiredCondition]:
    """The conditions that ``sql`` does not honour; [] when it does or when it does not parse."""
    if not conditions:
        return []
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
        scopes = list(traverse_scope(tree))
    except (SqlglotError, RecursionError):
        return []  # the safety check reports SQL it cannot read
    return [c for c in conditions if not _honoured(scopes, c)]


@dataclass(frozen=True, slots=True)
class _Atom:
    """One required conjunct, unqualified and normalized."""

    tree: exp.Expr
    constraint: tuple[str, str, frozenset[Value]] | None


def _honoured(scopes: list[Scope], condition: RequiredCondition) -> bool:
    target = condition.applies_to.lower()
    try:
        atoms = [_atom(part) for part in _conjuncts(parse_predicate(condition.sql))]
    except ValueError:
        return True  # a rule that does not parse is reported by `rules check`, not held against the LLM
    needed = {c.name.lower() for a in atoms for c in a.tree.find_all(exp.Column)}
    for scope in scopes:
        for alias, source in scope.sources.items():
            if (isinstance(source, exp.Table) and _is_table(source, target)
                    and not _filtered(scope, alias, atoms, needed, scopes, set())):
                return False
    return True


def _is_table(table: exp.Table, target: str) -> bool:
    name = table.name.lower()
    qualified = f"{table.db.lower()}.{name}" if table.db else name
    return target in {name, qualified} if "." not in target else target == qualified or (
        not table.db and target.rsplit(".", 1)[-1] == name)


def _filtered(scope: Scope, alias: str, atoms: list[_Atom], needed: set[str], scopes: list[Scope],
              seen: set[int]) -> bool:
    if id(scope) in seen:
        return False
    seen = seen | {id(scope)}
    candidates = [_normalize(c, alias.lower()) for c in _scope_conjuncts(scope, alias)]
    usable = [c for c in candidates if c is not None]
    if all(any(_implies(c, a) for c in usable) for a in atoms):
        return True
    # Not filtered here: a derived table or CTE that passes the columns through may be filtered outside.
    if not (scope.is_derived_table or scope.is_cte) or not _passes_through(scope, alias, needed):
        return False
    uses = [(s, name) for s in scopes for name, src in s.sources.items() if src is scope]
    return all(_filtered(s, name, atoms, needed, scopes, seen) for s, name in uses)


def _passes_through(scope: Scope, alias: str, needed: set[str]) -> bool:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return False
    exposed: set[str] = set()
    for projection in select.expressions:
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column)
                                                and isinstance(projection.this, exp.Star)
                                                and projection.table.lower() in {"", alias.lower()}):
            return True
        if isinstance(projection, exp.Column) and projection.table.lower() in {"", alias.lower()}:
            exposed.add(projection.name.lower())
    return needed <= exposed


def _scope_conjuncts(scope: Scope, alias: str) -> Iterator[exp.Expr]:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return
    where = select.args.get("where")
    if where is not None:
        yield from _conjuncts(where.this)
    for join in select.args.get("joins") or ():
        on = join.args.get("on")
        if on is None:
            continue
        own = isinstance(join.this, exp.Table) and join.this.alias_or_name.lower() == alias.lower()
        if own or not join.side:
            yield from _conjuncts(on)


def _conjuncts(node: exp.Expr) -> Iterator[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


def _atom(node: exp.Expr) -> _Atom:
    normal = _normalize(node, None)
    assert normal is not None  # no qualifier restriction for the rule's own predicate
    return _Atom(normal, _constraint(normal))


def _normalize(node: exp.Expr, alias: str | None) -> exp.Expr | None:
    """A copy with qualifiers dropped and a canonical shape; None when it reads another table's columns."""
    tree = node.copy()
    for column in list(tree.find_all(exp.Column)):
        qualifier = column.table.lower()
        if qualifier and alias is not None and qualifier != alias:
            return None
        column.set("table", None)
        column.set("db", None)
    return _canonical(tree)


FLIP: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.EQ: exp.EQ, exp.NEQ: exp.NEQ, exp.GT: exp.LT, exp.LT: exp.GT, exp.GTE: exp.LTE, exp.LTE: exp.GTE,
    exp.NullSafeEQ: exp.NullSafeEQ, exp.NullSafeNEQ: exp.NullSafeNEQ,
}


def _canonical(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Not):
        inner = _canonical(node.this)
        if isinstance(inner, exp.EQ):
            return exp.NEQ(this=inner.this, expression=inner.expression)
        if isinstance(inner, exp.NEQ):
            return exp.EQ(this=inner.this, expression=inner.expression)
        return exp.Not(this=inner)
    if type(node) in FLIP and not isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Column):
        return FLIP[type(node)](this=node.expression, expression=node.this)
    return node


def _constraint(node: exp.Expr) -> tuple[str, str, frozenset[Value]] | None:
    """(column, 'in' | 'not_in', values) when ``node`` restricts one column to or away from literals."""
    negated = False
    if isinstance(node, exp.Not):
        node, negated = _canonical(node.this), True
    column = _column(node.this) if isinstance(node, (exp.Binary, exp.In, exp.Is)) else _column(node)
    if column is None:
        return None
    kind: str | None = None
    values: frozenset[Value] | None = None
    if isinstance(node, exp.Column) or (isinstance(node, exp.Cast) and column):
        kind, values = "in", frozenset({("b", True)})
    elif isinstance(node, (exp.EQ, exp.NullSafeEQ, exp.NEQ, exp.NullSafeNEQ)):
        positive = isinstance(node, (exp.EQ, exp.NullSafeEQ))
        values = _values([node.expression]) if not _array_op(node.expression) else _array_values(node.expression)
        quantifier = _array_op(node.expression)
        if quantifier == "all" and positive or quantifier == "any" and not positive:
            return None  # `= ALL (...)` and `<> ANY (...)` say nothing simple
        kind = "in" if positive else "not_in"
    elif isinstance(node, exp.In) and not node.args.get("query"):
        kind, values = ("not_in" if node.args.get("negate") else "in"), _values(node.expressions)
    elif isinstance(node, exp.Is):
        kind, values = ("not_in" if node.args.get("negate") else "in"), _values([node.expression])
    if kind is None or values is None:
        return None
    if negated:
        kind = "in" if kind == "not_in" else "not_in"
    return column, kind, values


def _column(node: exp.Expr | None) -> str | None:
    while isinstance(node, (exp.Cast, exp.Paren)):
        node = node.this
    return node.name.lower() if isinstance(node, exp.Column) else None


def _array_op(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Any):
        return "any"
    if isinstance(node, exp.All) or (isinstance(node, exp.Anonymous) and node.name.upper() == "ALL"):
        return "all"
    return None


def _array_values(node: exp.Expr) -> frozenset[Value] | None:
    array = node.find(exp.Array)
    return _values(array.expressions) if array is not None else None


def _values(nodes: Iterable[exp.Expr]) -> frozenset[Value] | None:
    out: set[Value] = set()
    for node in nodes:
        while isinstance(node, (exp.Cast, exp.Paren)):
            node = node.this
        if isinstance(node, exp.Literal):
            out.add(("s", node.this) if node.is_string else ("n", float(node.this)))
        elif isinstance(node, exp.Boolean):
            out.add(("b", bool(node.this)))
        elif isinstance(node, exp.Null):
            out.add(("null", None))
        else:
            return None
    return frozenset(out)


def _implies(candidate: exp.Expr, atom: _Atom) -> bool:
    if atom.constraint is not None:
        have = _constraint(candidate)
        if have is not None and have[0] == atom.constraint[0]:
            _, want_kind, want = atom.constraint
            _, kind, values = have
            if want_kind == "not_in":
                return want <= values if kind == "not_in" else not (values & want)
            return kind == "in" and values <= want
    return candidate.sql(dialect="postgres", normalize=True) == atom.tree.sql(dialect="postgres", normalize=True)
