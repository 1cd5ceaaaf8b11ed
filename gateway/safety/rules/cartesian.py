"""Cartesian products: several relations in one FROM with no predicate linking them.

A FROM item counts unless it cannot multiply rows by much: a function in FROM whose arguments read a
column (``unnest(o.items)``: it expands each row of its side), a LATERAL subquery (correlated with its
left side), or a relation that yields one row (``VALUES`` with one row, an aggregate without
GROUP BY however its value is then computed, ``CAST(count(*) AS real)``, ``sum(x) * 100.0 / count(*)``,
``LIMIT 1``, also through a CTE). The rest must be linked, through ``JOIN ... ON/USING`` or
WHERE conjuncts that relate them: a join whose ON is constant, touches one side only or relates the sides
only by ``<>`` is a cartesian product too, and so is a WHERE conjunct of that kind (range joins relate
the sides and are left to the cost gate). Without a schema an unqualified column cannot be attributed, so
a WHERE conjunct with two or more columns of which one is unqualified is taken as linking everything it
touches.

A SELECT whose every output aggregates one side of the product on its own, with an aggregate that
duplicates do not change (``count(DISTINCT a.x), max(b.y)``), answers as if each side were read alone;
it is allowed and its cost is left to the cost gate. ``count(*)`` or ``sum`` over a product counts the
product, the classic mistake, and stays refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.context import Context
from gateway.safety.functions import AGGREGATES, SET_RETURNING
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import JSON, descend, names, unwrap


def cartesian(ctx: Context, policy: Policy) -> Iterator[Finding]:
    if policy.allow_cartesian:
        return
    one_row_ctes = {c["ctename"] for c, _ in ctx.tree.ctes if _one_row(unwrap(c.get("ctequery"))[1])}
    for select in ctx.tree.selects:
        items: list[object] = []
        predicates: list[object] = [select.body.get("whereClause")]
        for node in select.body.get("fromClause", ()):
            _flatten(node, items, predicates)
        items = [i for i in items if not _exempt(i, one_row_ctes)]
        if len(items) < 2 or all(unwrap(i)[0] in _FUNCTIONS for i in items):
            continue  # functions with constant arguments alone: their product is generate_series's rule's
        groups = _link(items, predicates)
        if len(groups) > 1 and not _independent_aggregates(select.body, groups):
            shown = " x ".join(sorted("/".join(sorted(g)) or "?" for g in groups))
            yield Finding("cartesian_product", f"FROM combines {shown} with no predicate linking them; add a "
                          "join condition (or the database's policy may set allow_cartesian).", "FROM")


def _flatten(node: object, items: list[object], predicates: list[object]) -> None:
    """Split joins whose ON does not relate their two sides into their items; keep their ON for linking."""
    kind, body = unwrap(node)
    if kind == "JoinExpr" and _is_cross(body):
        _flatten(body.get("larg"), items, predicates)
        _flatten(body.get("rarg"), items, predicates)
        predicates.append(body.get("quals"))
    else:
        items.append(node)


def _is_cross(join: JSON) -> bool:
    """A join whose ON is missing, constant (``ON 2 = 2``), touches one side only (``ON a.x IS NOT NULL``)
    or relates the sides only by ``<>`` multiplies its sides; range joins (``<``, ``BETWEEN``) relate them
    and are left to the cost gate. Outer joins count too: ``LEFT JOIN b ON true`` still multiplies."""
    if join.get("isNatural") or join.get("usingClause"):
        return False
    quals = join.get("quals")
    if quals is None:
        return True
    sides = [_names_of(join.get("larg")), _names_of(join.get("rarg"))]
    return len(_link_groups(sides, [quals])) > 1


_FUNCTIONS = ("RangeFunction", "RangeTableFunc", "JsonTable")


def _exempt(node: object, one_row_ctes: set[str]) -> bool:
    kind, body = unwrap(node)
    if kind in _FUNCTIONS:
        # Correlated (``unnest(o.items)``, ``jsonb_array_elements(t.data)``) it expands each row of its left
        # side; with constant arguments (``generate_series(1, 8000)``) it multiplies the other items.
        return any(k == "ColumnRef" for k, _ in descend(body))
    if kind == "RangeSubselect":
        return bool(body.get("lateral")) or _one_row(unwrap(body.get("subquery"))[1])
    if kind == "RangeVar":
        return not body.get("schemaname") and body.get("relname") in one_row_ctes
    return False


def _one_row(select: JSON) -> bool:
    if len(select.get("valuesLists", ())) == 1:
        return True
    kind, limit = unwrap(select.get("limitCount"))
    if kind == "A_Const" and limit.get("ival", {}).get("ival", 0) <= 1 and "ival" in limit:
        return True
    if select.get("groupClause") or select.get("op", "SETOP_NONE") != "SETOP_NONE":
        return False
    targets = [unwrap(t)[1].get("val") for t in select.get("targetList", ())]
    if not select.get("fromClause"):
        return bool(targets)
    # An aggregate without GROUP BY yields one row whatever is computed from it; a set-returning function
    # in the targets would multiply that row.
    calls = [call for t in targets for call in _calls(t)]
    return any(_is_aggregate(call) for call in calls) and not any(_fname(call) in SET_RETURNING for call in calls)


def _fname(call: JSON) -> str:
    return (names(call.get("funcname")) or [""])[-1].lower()


def _is_aggregate(call: JSON) -> bool:
    return "over" not in call and _fname(call) in AGGREGATES


def _calls(node: object, *, into_aggregates: bool = True) -> list[JSON]:
    """The function calls of one expression of this query level (not inside a subquery)."""
    out: list[JSON] = []
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
            continue
        kind, body = unwrap(value)
        if kind == "SubLink":
            continue
        if kind == "FuncCall":
            out.append(body)
            if not into_aggregates and _is_aggregate(body):
                continue
        container = body if kind else value if isinstance(value, dict) else {}
        stack.extend(v for v in container.values() if isinstance(v, (dict, list)))
    return out


# Aggregates whose value duplicates of its input rows do not change (besides any with DISTINCT).
_DUPLICATE_INSENSITIVE = frozenset({"min", "max", "bool_and", "bool_or", "every", "bit_and", "bit_or"})


def _independent_aggregates(select: JSON, groups: list[set[str]]) -> bool:
    """Every output of a SELECT without GROUP BY is computed from aggregates that duplicates do not change,
    each reading (qualified) columns of one side of the product only: the product changes no value."""
    if select.get("groupClause") or select.get("havingClause") or select.get("distinctClause") \
            or select.get("windowClause"):
        return False
    targets = [unwrap(t)[1].get("val") for t in select.get("targetList", ())]
    if not targets:
        return False
    read: set[int] = set()  # the sides the aggregates read: every side must be one
    for target in targets:
        if any(k in ("SubLink", "A_Star") for k, _ in descend(target)):
            return False
        outer = _calls(target, into_aggregates=False)
        if any("over" in call or _fname(call) in SET_RETURNING for call in outer):
            return False
        aggregates = [call for call in outer if _is_aggregate(call)]
        inside = {id(ref) for call in aggregates for k, ref in descend(call) if k == "ColumnRef"}
        if any(k == "ColumnRef" and id(ref) not in inside for k, ref in descend(target)):
            return False  # a column outside any aggregate
        for call in aggregates:
            if not (call.get("agg_distinct") or _fname(call) in _DUPLICATE_INSENSITIVE) or call.get("agg_star"):
                return False
            refs = [names(ref.get("fields")) for k, ref in descend(call) if k == "ColumnRef"]
            if not refs or any(len(r) < 2 for r in refs):
                return False  # an unqualified column cannot be attributed to one side
            sides = {i for i, g in enumerate(groups) for r in refs if r[-2] in g}
            if len(sides) != 1 or any(not any(r[-2] in g for g in groups) for r in refs):
                return False
            read |= sides
    return read == set(range(len(groups)))


def _names_of(node: object) -> set[str]:
    """Names by which columns of a FROM item can be qualified."""
    out: set[str] = set()
    for kind, body in descend(node):
        if kind == "RangeVar":
            out.add(body.get("alias", {}).get("aliasname") or body.get("relname", ""))
        elif kind in ("RangeSubselect", "RangeFunction", "JoinExpr") and body.get("alias"):
            out.add(body["alias"].get("aliasname", ""))
        elif kind == "RangeFunction":  # unaliased: its columns are qualified by the function's name
            out.update(names(call.get("funcname"))[-1] for k, call in descend(body.get("functions"))
                       if k == "FuncCall" and names(call.get("funcname")))
    return out


def _link(items: list[object], predicates: list[object]) -> list[set[str]]:
    return _link_groups([_names_of(i) for i in items], predicates)


def _link_groups(groups: list[set[str]], predicates: list[object]) -> list[set[str]]:
    for conjunct in (c for p in predicates for c in _conjuncts(p)):
        if not _relates(conjunct):
            continue
        refs = [names(b.get("fields")) for k, b in descend(conjunct) if k == "ColumnRef"]
        touched = {i for i, g in enumerate(groups) for r in refs if len(r) > 1 and r[-2] in g}
        if len(refs) > 1 and any(len(r) == 1 for r in refs):
            touched = set(range(len(groups)))
        if len(touched) > 1:
            merged = set().union(*(groups[i] for i in touched))
            groups = [g for i, g in enumerate(groups) if i not in touched] + [merged]
    return groups


def _conjuncts(node: object) -> list[object]:
    kind, body = unwrap(node)
    if kind == "BoolExpr" and body.get("boolop") == "AND_EXPR":
        return [c for arg in body.get("args", ()) for c in _conjuncts(arg)]
    return [node] if kind else []


def _relates(node: object) -> bool:
    """Whether a predicate can relate the columns it touches: ``<>``, ``IS DISTINCT FROM``, NOT and null
    tests do not (each keeps almost every pair of rows); an OR relates only if each of its arms does."""
    kind, body = unwrap(node)
    if kind == "A_Expr":
        return body.get("kind") != "AEXPR_DISTINCT" and names(body.get("name"))[-1:] not in (["<>"], ["!="])
    if kind == "BoolExpr":
        args = body.get("args", ())
        if body.get("boolop") == "OR_EXPR":
            # ON a.id = b.id OR true keeps every pair: each arm must relate columns on its own.
            return all(_relates(a) and sum(k == "ColumnRef" for k, _ in descend(a)) > 1 for a in args)
        if body.get("boolop") == "AND_EXPR":
            return any(_relates(a) for a in args)
        return False  # NOT
    return kind not in ("NullTest", "BooleanTest")
