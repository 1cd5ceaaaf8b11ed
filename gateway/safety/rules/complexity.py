"""Size limits: syntax tree nodes, subquery nesting and joins, each from the database's policy."""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy


def complexity(ctx: Context, policy: Policy) -> Iterator[Finding]:
    tree = ctx.tree
    if tree.nodes > policy.max_ast_nodes:
        yield Finding("too_complex", f"The query has {tree.nodes} syntax nodes; the limit is "
                      f"{policy.max_ast_nodes} (max_ast_nodes).", "query")
    if tree.max_depth > policy.max_subquery_depth:
        yield Finding("subquery_too_deep", f"Subqueries nest {tree.max_depth} deep; the limit is "
                      f"{policy.max_subquery_depth} (max_subquery_depth).", "subquery")
    # Every JoinExpr is one join; a FROM list of n items is n - 1 (comma) joins.
    joins = len(tree.joins) + sum(max(len(s.body.get("fromClause", ())) - 1, 0) for s in tree.selects)
    if joins > policy.max_joins:
        yield Finding("too_many_joins", f"The query has {joins} joins; the limit is {policy.max_joins} "
                      "(max_joins).", "JOIN")
