"""Recursive CTEs: refused when the policy forbids them, otherwise they must show a bound the analysis can see.

Any WHERE is not a bound (``WHERE n > 0`` over ``n + 1`` never stops). A recursive CTE is bounded when:

- **a counter**: its recursive term reads only the CTE, one column steps by a positive constant
  (``n + 1``, or ``n - 2`` going down) from a constant start, and a top-level conjunct of the WHERE stops it at
  a constant (``n < 100``, ``n >= -5``); the number of iterations (at most ``max_generate_series``) is then
  known;
- **a walk over stored data**: its recursive term joins the CTE to tables only, by an equality between a
  column of the CTE and a column of a table (``e.manager_id = c.employee_id``): each step follows stored
  rows; a cycle in the data is stopped by ``statement_timeout`` (time; the work table spills to disk). A
  derived table that keeps some rows of one table (``(SELECT * FROM employees AS x WHERE ...) e``: how the
  row-filter rewrite, gateway.rules.row_filters, writes every filtered reference) counts as that table;
- **a LIMIT that stops it**: the statement owning the WITH reads the CTE alone with a constant LIMIT and
  nothing that needs every row first (no WHERE, ORDER BY, GROUP BY, DISTINCT, aggregate or window), and the
  CTE is read nowhere else: Postgres computes a recursive CTE lazily, so it stops after LIMIT rows.

CYCLE and SEARCH clauses are not bounds (``CYCLE n`` over ``n + 1`` never sees a cycle).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.safety import fold
from gateway.safety.context import Context
from gateway.safety.counters import conjuncts, counted, cte_columns, fans_out, reads_only
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import JSON, descend, names, unwrap


def recursion(ctx: Context, policy: Policy) -> Iterator[Finding]:
    for select in ctx.tree.selects:
        with_clause = select.body.get("withClause")
        if not with_clause or not with_clause.get("recursive"):
            continue
        for node in with_clause.get("ctes", ()):
            _, cte = unwrap(node)
            name = cte.get("ctename", "")
            _, query = unwrap(cte.get("ctequery"))
            term = query.get("rarg") if query.get("op") == "SETOP_UNION" else None
            if term is None or not _references(term, name):
                continue  # WITH RECURSIVE on a CTE that does not recurse
            pos = ctx.position(cte.get("location"))
            if not policy.allow_recursive:
                yield Finding("recursion_not_allowed", f"WITH RECURSIVE {name} is not allowed on this "
                              "database (allow_recursive).", name, pos)
                continue
            columns = cte_columns(cte, query.get("larg") or {})
            iterations = counted(term, name, columns, query.get("larg") or {})
            if iterations is not None:
                if iterations > policy.max_generate_series:
                    yield Finding("unbounded_recursion", f"The counter of {name} runs about {iterations:,.0f} "
                                  f"steps; the limit is {policy.max_generate_series:,} (max_generate_series).",
                                  name, pos)
                continue
            if _walks(term, name) or _limited(ctx, select.body, name):
                continue
            yield Finding("unbounded_recursion", f"The recursive term of {name} shows no bound: step a counter "
                          "column by a constant and stop it at a constant in the WHERE (n + 1 ... WHERE n < 100), "
                          "join it to a table by equality, or read it with a LIMIT alone.", name, pos)


def _references(term: JSON, name: str) -> bool:
    return any(k == "RangeVar" and b.get("relname") == name and not b.get("schemaname")
               for k, b in descend(term))


def _walks(term: JSON, name: str) -> bool:
    """The CTE joined to tables only, by an equality between a CTE column and a table column."""
    items: list[tuple[str, JSON]] = []
    quals: list[Any] = [term.get("whereClause")]
    stack = list(term.get("fromClause", ()))
    while stack:
        kind, body = unwrap(stack.pop())
        if kind == "JoinExpr":
            stack += [body.get("larg"), body.get("rarg")]
            quals.append(body.get("quals"))
        else:
            items.append((kind, body))
    if any(kind != "RangeVar" and not (kind == "RangeSubselect" and _one_table(body, name))
           for kind, body in items) or fans_out(term):
        return False
    own = {b.get("alias", {}).get("aliasname") or name for _, b in items
           if b.get("relname") == name and not b.get("schemaname")}
    tables = {b.get("alias", {}).get("aliasname") or b.get("relname") for _, b in items
              if not (b.get("relname") == name and not b.get("schemaname"))} - {None}
    if not own or not tables:
        return False
    for conjunct in (c for q in quals for c in conjuncts(q)):
        kind, expr = unwrap(conjunct)
        if kind != "A_Expr" or expr.get("kind") != "AEXPR_OP" or names(expr.get("name")) != ["="]:
            continue
        sides = [_qualifier(expr.get("lexpr")), _qualifier(expr.get("rexpr"))]
        if (sides[0] in own and sides[1] in tables) or (sides[1] in own and sides[0] in tables):
            return True
    return False


def _one_table(derived: JSON, name: str) -> bool:
    """``(SELECT a, b FROM t [AS x] [WHERE ...]) alias``: at most one row per stored row of one table (not the
    CTE); no set operation, WITH, join, function, LATERAL or computed target that could make more rows."""
    _, query = unwrap(derived.get("subquery"))
    if derived.get("lateral") or query.get("op", "SETOP_NONE") != "SETOP_NONE" or query.get("withClause") \
            or query.get("valuesLists"):
        return False
    items = query.get("fromClause", ())
    if len(items) != 1:
        return False
    kind, rel = unwrap(items[0])
    if kind != "RangeVar" or (rel.get("relname") == name and not rel.get("schemaname")):
        return False
    return all(unwrap(unwrap(t)[1].get("val"))[0] == "ColumnRef" for t in query.get("targetList", ()))


def _qualifier(node: Any) -> str | None:
    kind, ref = unwrap(node)
    parts = names(ref.get("fields")) if kind == "ColumnRef" else []
    return parts[-2] if len(parts) >= 2 else None


def _limited(ctx: Context, owner: JSON, name: str) -> bool:
    """A constant LIMIT on a plain read of the CTE alone, which is read nowhere else."""
    if fold.number(owner.get("limitCount")) is None:
        return False
    if any(owner.get(k) for k in ("whereClause", "groupClause", "havingClause", "sortClause", "distinctClause",
                                  "windowClause", "groupDistinct")):
        return False
    if reads_only(owner, name) is None:
        return False
    for target in owner.get("targetList", ()):
        if any(k in ("FuncCall", "SubLink") for k, _ in descend(target)):
            return False  # an aggregate, a window or a set-returning function may need every row
    reads = sum(1 for rel, _ in ctx.tree.relations if rel.get("relname") == name and not rel.get("schemaname"))
    return reads == 2  # the recursive term's and this one
