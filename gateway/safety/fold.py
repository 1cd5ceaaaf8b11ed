"""Constant folding over Postgres's parse tree, for the rules that judge sizes and patterns.

``number(node)`` and ``text(node)`` evaluate the small part of SQL an attacker uses to hide a constant:
literals, casts, arithmetic (``600000 * 1000``, ``10 ^ 9``), ``||`` and ``concat`` of constants,
``chr``/``lower``/``upper``/``replace``, and a scalar subquery that selects one constant. Anything else is
``None``: not a constant, so the rules leave it to the engine's layers (cost gate, statement_timeout).

Numbers are floats: an overflow becomes ``inf``, which is larger than any limit, which is what it means.

>>> import json, pglast
>>> def expr(sql):
...     tree = json.loads(pglast.parser.parse_sql_json("SELECT " + sql))
...     return tree["stmts"][0]["stmt"]["SelectStmt"]["targetList"][0]["ResTarget"]["val"]
>>> number(expr("600000 * 1000")), number(expr("'1e9'::int")), number(expr("(SELECT 2 ^ 10)"))
(600000000.0, 1000000000.0, 1024.0)
>>> text(expr("'(b+)' || chr(92) || '1'")), number(expr("n * 2"))
('(b+)\\\\1', None)
"""

from __future__ import annotations

import math
from typing import Any

from gateway.safety.tree import names, unwrap

_TEXT_TYPES = frozenset({"text", "varchar", "bpchar", "char", "character", "name", "unknown"})


def number(node: Any, depth: int = 0) -> float | None:
    """The numeric value of a constant expression, or None."""
    if depth > 50:
        return None
    kind, body = unwrap(node)
    if kind == "A_Const":
        if "ival" in body:
            return float(body["ival"].get("ival", 0))
        if "fval" in body:
            return _float(body["fval"].get("fval"))
        if "sval" in body:  # '1e9'::int: the cast above gives the string its meaning
            return _float(body["sval"].get("sval"))
        return None
    if kind == "TypeCast":
        return number(body.get("arg"), depth + 1)
    if kind == "A_Expr" and body.get("kind") == "AEXPR_OP":
        op = (names(body.get("name")) or [""])[-1]
        right = number(body.get("rexpr"), depth + 1)
        if right is None:
            return None
        if body.get("lexpr") is None:
            return -right if op == "-" else right if op == "+" else None
        left = number(body.get("lexpr"), depth + 1)
        return None if left is None else _arith(op, left, right)
    if kind == "FuncCall":
        name = (names(body.get("funcname")) or [""])[-1].lower()
        args = [number(a, depth + 1) for a in body.get("args", ())]
        if any(a is None for a in args) or not args:
            if name in ("length", "char_length", "octet_length") and len(args) == 1:
                value = text(body["args"][0], depth + 1)
                return None if value is None else float(len(value))
            return None
        values = [a for a in args if a is not None]
        if name in ("power", "pow") and len(values) == 2:
            return _arith("^", values[0], values[1])
        if name in ("greatest", "abs", "ceil", "ceiling", "floor", "round", "trunc"):
            return abs(max(values)) if name == "abs" else max(values)
        if name == "least":
            return min(values)
        return None
    if kind == "SubLink" and body.get("subLinkType") == "EXPR_SUBLINK":
        only = _only_target(body.get("subselect"))
        return None if only is None else number(only, depth + 1)
    return None


def text(node: Any, depth: int = 0) -> str | None:
    """The string value of a constant text expression, or None."""
    if depth > 50:
        return None
    kind, body = unwrap(node)
    if kind == "A_Const":
        if "sval" in body:
            return str(body["sval"].get("sval", ""))
        value = number(node, depth + 1)
        return None if value is None else _number_text(value)
    if kind == "TypeCast":
        type_name = (names(body.get("typeName", {}).get("names")) or [""])[-1].lower()
        return text(body.get("arg"), depth + 1) if type_name in _TEXT_TYPES else None
    if kind == "A_Expr" and body.get("kind") == "AEXPR_OP" and names(body.get("name")) == ["||"]:
        left, right = text(body.get("lexpr"), depth + 1), text(body.get("rexpr"), depth + 1)
        return None if left is None or right is None else left + right
    if kind == "FuncCall":
        name = (names(body.get("funcname")) or [""])[-1].lower()
        args = body.get("args", ())
        if name == "chr" and len(args) == 1:
            code = number(args[0], depth + 1)
            return chr(int(code)) if code is not None and 0 < code < 0x110000 else None
        parts = [text(a, depth + 1) for a in args]
        if any(p is None for p in parts):
            return None
        values = [p for p in parts if p is not None]
        if name == "concat":
            return "".join(values)
        if name in ("lower", "upper") and len(values) == 1:
            return values[0].lower() if name == "lower" else values[0].upper()
        if name == "replace" and len(values) == 3:
            return values[0].replace(values[1], values[2])
        if name == "repeat" and len(values) == 2:
            count = number(args[1], depth + 1)
            if count is not None and 0 <= count * len(values[0]) <= 10_000:
                return values[0] * int(count)
        return None
    if kind == "SubLink" and body.get("subLinkType") == "EXPR_SUBLINK":
        only = _only_target(body.get("subselect"))
        return None if only is None else text(only, depth + 1)
    return None


def _only_target(subselect: Any) -> Any:
    """The one target of a scalar subquery: ``(SELECT 200000000 FROM orders LIMIT 1)`` is that constant or
    NULL whatever its FROM, WHERE or LIMIT say (grouping could only repeat it, and then Postgres refuses)."""
    kind, select = unwrap(subselect)
    targets = select.get("targetList", ())
    if kind != "SelectStmt" or len(targets) != 1:
        return None
    return unwrap(targets[0])[1].get("val")


def _float(value: object) -> float | None:
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        return None


def _arith(op: str, left: float, right: float) -> float | None:
    try:
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "/":
            return left / right if right else None
        if op == "%":
            return math.fmod(left, right) if right else None
        if op == "^":
            return float(left ** right) if not (left < 0 and right != int(right)) else None
    except OverflowError:
        return math.inf
    return None


def _number_text(value: float) -> str:
    return str(int(value)) if math.isfinite(value) and value == int(value) and abs(value) < 1e18 else repr(value)
