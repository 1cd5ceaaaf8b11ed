"""Counters of recursive CTEs: how many steps a counter-bounded recursive term runs.

A recursive term is counter-bounded when it reads only the CTE, one column steps by a positive constant
(``n + 1``, or ``n - 2`` going down) from a constant start, and a top-level conjunct of its WHERE stops it at
a constant (``n < 100``, ``n >= -5``); see gateway.safety.rules.recursion for the rule and the other bounds.

Both the recursion rule and the size analysis (gateway.safety.sizes: a column that grows by a constant each
step) count steps here, so neither imports the other.
"""

from __future__ import annotations

from typing import Any

from gateway.safety import fold
from gateway.safety.functions import SET_RETURNING
from gateway.safety.tree import JSON, descend, names, unwrap


def iterations(cte: JSON) -> float | None:
    """Steps of a counter-bounded recursive CTE (see the module docstring), or None."""
    name = cte.get("ctename", "")
    _, query = unwrap(cte.get("ctequery"))
    term = query.get("rarg") if query.get("op") == "SETOP_UNION" else None
    if term is None:
        return None
    first = query.get("larg") or {}
    return counted(term, name, cte_columns(cte, first), first)


def cte_columns(cte: JSON, first: JSON) -> list[str]:
    """The CTE's column names: its alias list, else the names of its non-recursive term's targets."""
    aliases = names(cte.get("aliascolnames"))
    if aliases:
        return aliases
    while first.get("op", "SETOP_NONE") != "SETOP_NONE":
        first = first.get("larg") or {}
    out = []
    for target in first.get("targetList", ()):
        _, res = unwrap(target)
        if res.get("name"):
            out.append(res["name"])
        else:
            kind, val = unwrap(res.get("val"))
            out.append((names(val.get("fields")) or [""])[-1] if kind == "ColumnRef" else "")
    return out


def reads_only(select: JSON, name: str) -> JSON | None:
    """The RangeVar of ``select`` when its FROM is the unqualified relation ``name`` alone, else None."""
    items = select.get("fromClause", ())
    if len(items) != 1:
        return None
    kind, rel = unwrap(items[0])
    if kind != "RangeVar" or rel.get("relname") != name or rel.get("schemaname"):
        return None
    return rel


def counted(term: JSON, name: str, columns: list[str], first: JSON) -> float | None:
    """Iterations of a counter-bounded recursive term, or None when it is not one."""
    rel = reads_only(term, name)
    if rel is None:
        return None
    alias = rel.get("alias", {}).get("aliasname") or name
    if fans_out(term):
        return None
    targets = [unwrap(unwrap(t)[1].get("val")) for t in term.get("targetList", ())]
    starts = [unwrap(t)[1].get("val") for t in first.get("targetList", ())]
    if first.get("op", "SETOP_NONE") != "SETOP_NONE" or len(starts) != len(columns):
        return None
    best: float | None = None
    for conjunct in conjuncts(term.get("whereClause")):
        stop = _stop(conjunct, alias, columns)
        if stop is None:
            continue
        position, limit, upward = stop
        if position >= len(targets):
            continue
        step = _step(targets[position], alias, columns[position])
        start = fold.number(starts[position])
        if step is None or start is None or (step > 0) != upward:
            continue
        steps = max((limit - start) / step, 0.0) + 2  # the start row and the step that fails the test
        best = steps if best is None else min(best, steps)
    return best


def _stop(conjunct: Any, alias: str, columns: list[str]) -> tuple[int, float, bool] | None:
    """``n < 100`` -> (position of n, 100, True: the counter must go up to reach it)."""
    kind, expr = unwrap(conjunct)
    if kind != "A_Expr" or expr.get("kind") != "AEXPR_OP":
        return None
    op = (names(expr.get("name")) or [""])[-1]
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
    left, right = expr.get("lexpr"), expr.get("rexpr")
    if _column_position(left, alias, columns) is None:
        left, right, op = right, left, flip.get(op, "")
    position = _column_position(left, alias, columns)
    limit = fold.number(right)
    if position is None or limit is None or op not in flip:
        return None
    return position, limit, op in ("<", "<=")


def _column_position(node: Any, alias: str, columns: list[str]) -> int | None:
    kind, ref = unwrap(node)
    while kind == "TypeCast":
        kind, ref = unwrap(ref.get("arg"))
    if kind != "ColumnRef":
        return None
    parts = names(ref.get("fields"))
    if len(parts) == 2 and parts[0] != alias or len(parts) > 2 or not parts:
        return None
    return columns.index(parts[-1]) if parts[-1] in columns else None


def _step(target: tuple[str, JSON], alias: str, column: str) -> float | None:
    """``n + 3`` -> 3, ``n - 1`` -> -1 for the counter column; None for anything else."""
    kind, expr = target
    if kind != "A_Expr" or expr.get("kind") != "AEXPR_OP":
        return None
    op = (names(expr.get("name")) or [""])[-1]
    left, right = expr.get("lexpr"), expr.get("rexpr")
    if op == "+" and _column_position(right, alias, [column]) == 0:
        left, right = right, left
    if _column_position(left, alias, [column]) != 0:
        return None
    amount = fold.number(right)
    if amount is None or amount <= 0 or op not in ("+", "-"):
        return None
    return amount if op == "+" else -amount


def fans_out(term: JSON) -> bool:
    """A set-returning function in the recursive term's targets multiplies the rows of every step."""
    return any(k == "FuncCall" and (names(b.get("funcname")) or [""])[-1].lower() in SET_RETURNING
               for k, b in descend(term.get("targetList")))


def conjuncts(node: Any) -> list[Any]:
    kind, body = unwrap(node)
    if kind == "BoolExpr" and body.get("boolop") == "AND_EXPR":
        return [c for arg in body.get("args", ()) for c in conjuncts(arg)]
    return [node] if kind else []
