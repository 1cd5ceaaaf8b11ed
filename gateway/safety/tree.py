"""One walk over Postgres's parse tree (pglast's JSON form), indexing the nodes the rules look at.

pglast hands back libpg_query's JSON: a node is a one-key dict ``{"FuncCall": {...}}``; plain structs
(aliases, the two arms of a set operation) are dicts with lower-case keys. Walking the JSON is about four
times cheaper than building pglast's Python objects, and it is exactly what Postgres will execute, so the
security rules judge this tree rather than sqlglot's. The walk is iterative: a deeply nested text must not
exhaust Python's stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


@dataclass(slots=True)
class Select:
    """A SELECT (or VALUES, or one arm of a set operation) and how deep it sits in subqueries."""

    body: JSON
    depth: int
    parent: int | None


@dataclass(slots=True)
class Tree:
    """The indexed statement. ``scope`` fields give the index in ``selects`` of the enclosing SELECT."""

    selects: list[Select] = field(default_factory=list)
    funcs: list[tuple[JSON, int]] = field(default_factory=list)
    relations: list[tuple[JSON, int]] = field(default_factory=list)
    columns: list[tuple[JSON, int]] = field(default_factory=list)
    joins: list[JSON] = field(default_factory=list)
    ctes: list[tuple[JSON, int]] = field(default_factory=list)
    operators: list[JSON] = field(default_factory=list)  # schema-qualified: OPERATOR(schema.op)
    samples: list[JSON] = field(default_factory=list)  # TABLESAMPLE method(...)
    matches: list[JSON] = field(default_factory=list)  # regular-expression operators: ~ ~* !~ !~* SIMILAR TO
    types: list[JSON] = field(default_factory=list)  # type names (casts, column definitions): a table's row type
    nodes: int = 0
    max_depth: int = 0

    def cte_names(self) -> frozenset[str]:
        return frozenset(c["ctename"] for c, _ in self.ctes if "ctename" in c)


_SET_ARMS = ("larg", "rarg")
_MATCH_OPS = (["~"], ["~*"], ["!~"], ["!~*"], ["@?"], ["@@"])  # the last two: jsonpath like_regex


def index(stmt: JSON) -> Tree:
    """Index a top-level statement node (``{"SelectStmt": ...}`` or the query of an EXPLAIN)."""
    tree = Tree()
    # (value, depth, enclosing select, key under which the value sits); only dicts and lists are pushed.
    stack: list[tuple[Any, int, int, str]] = [(stmt, -1, -1, "")]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth, scope, key = pop()
        if type(value) is list:
            for item in reversed(value):
                if type(item) is dict or type(item) is list:
                    push((item, depth, scope, key))
            continue
        kind, body = "", value
        if len(value) == 1:
            for only_key, only in value.items():
                if type(only) is dict and only_key[:1].isupper():
                    kind, body = only_key, only
        if kind:
            tree.nodes += 1
            if kind == "SelectStmt":
                depth += 1
            elif kind == "FuncCall":
                tree.funcs.append((body, scope))
            elif kind == "RangeVar":
                tree.relations.append((body, scope))
            elif kind == "ColumnRef":
                tree.columns.append((body, scope))
                continue
            elif kind == "JoinExpr":
                tree.joins.append(body)
            elif kind == "CommonTableExpr":
                tree.ctes.append((body, scope))
            elif kind == "A_Expr":
                if len(body.get("name", ())) > 1:
                    tree.operators.append(body)
                if names(body.get("name"))[-1:] in _MATCH_OPS:
                    tree.matches.append(body)
            elif kind == "RangeTableSample":
                tree.samples.append(body)
        elif key == "typeName":
            tree.types.append(body)  # a plain struct, not a one-key node
        if kind == "SelectStmt" or (not kind and key in _SET_ARMS):
            # A set-operation arm stays at its parent's depth (incremented above only for real SELECTs).
            tree.selects.append(Select(body, depth, scope if scope >= 0 else None))
            scope = len(tree.selects) - 1
            if depth > tree.max_depth:
                tree.max_depth = depth
        for child_key, child in reversed(body.items()):
            if type(child) is dict or type(child) is list:
                push((child, depth, scope, child_key))
    return tree


def names(items: list[Any] | None) -> list[str]:
    """The strings of a pglast name list (``[{"String": {"sval": "pg_catalog"}}, ...]``)."""
    out = []
    for item in items or ():
        if isinstance(item, dict) and "String" in item:
            out.append(item["String"].get("sval", ""))
    return out


def unwrap(node: Any) -> tuple[str, JSON]:
    """``{"Kind": body}`` -> ``("Kind", body)``; anything else -> ``("", {})``."""
    if isinstance(node, dict) and len(node) == 1:
        ((kind, body),) = node.items()
        if isinstance(body, dict):
            return kind, body
    return "", {}


def descend(node: Any) -> list[tuple[str, JSON]]:
    """Every typed node under ``node`` (itself included), in no particular order."""
    out: list[tuple[str, JSON]] = []
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            kind, body = unwrap(value)
            if kind[:1].isupper():
                out.append((kind, body))
            else:
                body = value
            stack.extend(v for v in body.values() if isinstance(v, (dict, list)))
    return out
