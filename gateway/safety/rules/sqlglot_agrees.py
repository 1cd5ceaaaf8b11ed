"""The second parser's opinion: what sqlglot sees that Postgres's tree did not already refuse.

Run last. sqlglot may only add refusals: an opaque command anywhere, a statement that is not a query,
writes, locks, INTO, and functions it reads as calls (``exp.Anonymous``, matched by name, never by
``sql_name()``, which gives sqlglot's own names).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.rules.functions import judge
from gateway.safety.tree import names

_WRITES = (exp.DML, exp.DDL, exp.Drop, exp.Alter, exp.TruncateTable, exp.Transaction, exp.Set, exp.Grant)


def sqlglot_agrees(ctx: Context, policy: Policy) -> Iterator[Finding]:
    root = ctx.expression
    if root is None:
        return
    if not isinstance(root, (exp.Query, exp.Values)):
        yield Finding("parse_error", f"sqlglot reads a {type(root).__name__} where PostgreSQL reads a query.")
        return
    seen = {(names(c.get("funcname")) or [""])[-1].lower() for c, _ in ctx.tree.funcs}
    pg_locks = any("lockingClause" in s.body for s in ctx.tree.selects)
    pg_into = any("intoClause" in s.body for s in ctx.tree.selects)
    for node in root.walk(bfs=False):
        category = _category(type(node))
        if category is None:
            continue
        if isinstance(node, exp.Command):
            yield Finding("parse_error", f"sqlglot keeps '{str(node.this)[:40]}' as an opaque command.")
        elif isinstance(node, _WRITES):
            cte = node.find_ancestor(exp.CTE)
            verb = type(node).__name__.upper()
            if cte is not None:  # same clause as Postgres's finding (the CTE's name), so it is deduplicated
                message = f"WITH {cte.alias} AS ({verb} ...) modifies data."
                yield Finding("data_modifying_cte", message, cte.alias)
            else:
                yield Finding("write_statement", f"sqlglot reads a {verb} inside the query.", verb)
        elif isinstance(node, exp.Lock) and not pg_locks:
            yield Finding("locking_clause", "sqlglot reads a locking clause (FOR UPDATE/SHARE).", "FOR")
        elif isinstance(node, exp.Into) and not pg_into:
            yield Finding("select_into", "sqlglot reads SELECT INTO, which creates a table.", "INTO")
        elif isinstance(node, exp.Anonymous) and node.name.lower() not in seen:
            finding = judge([node.name.lower()], policy)
            if finding is not None:
                yield finding


_CATEGORY: dict[type, object] = {}
_WATCHED = (exp.Command, *_WRITES, exp.Lock, exp.Into, exp.Anonymous)


def _category(cls: type) -> object:
    """Whether nodes of this class matter here, cached per class (the walk visits every node)."""
    try:
        return _CATEGORY[cls]
    except KeyError:
        _CATEGORY[cls] = True if issubclass(cls, _WATCHED) else None
        return _CATEGORY[cls]
