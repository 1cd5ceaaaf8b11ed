"""Recursive CTEs: refused when the policy forbids them, otherwise they must bound their recursion.

A recursive term is bounded when it has a WHERE, a join predicate (walking finite data, e.g. employees
by manager; a cycle in the data is then stopped by the statement timeout at execution), or the CTE has a
CYCLE clause; a LIMIT on the statement that owns the WITH bounds it too.
"""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import JSON, descend, unwrap


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
            elif not (_bounded(term) or cte.get("cycle_clause") or select.body.get("limitCount")):
                yield Finding("unbounded_recursion", f"The recursive term of {name} has no WHERE or join "
                              "condition to stop it, and there is no LIMIT.", name, pos)


def _references(term: JSON, name: str) -> bool:
    return any(k == "RangeVar" and b.get("relname") == name and not b.get("schemaname")
               for k, b in descend(term))


def _bounded(term: JSON) -> bool:
    if term.get("whereClause"):
        return True
    for kind, body in descend(term.get("fromClause")):
        if kind == "JoinExpr" and (body.get("usingClause") or body.get("isNatural")):
            return True
        if kind == "JoinExpr" and body.get("quals"):
            qkind, quals = unwrap(body["quals"])
            if not (qkind == "A_Const" and "boolval" in quals):
                return True
    return False
