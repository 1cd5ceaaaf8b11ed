"""Size amplification the text shows: functions that build a large value from a small constant.

``repeat('ab', 600000000)``, ``rpad('', 300000000, '-')``, ``array_fill(0, ARRAY[90000000])`` and
``format('%1000000000s', '')`` make one value of hundreds of megabytes on the database server from a few
bytes of SQL. Each size-amplifying call gets a lower bound of the size it builds: its constant count
(folded, so ``600000 * 1000`` counts) times the size of its argument, which is itself estimated the same way,
so nested calls multiply (``repeat(repeat('a', 1000), 1000)`` is a million). A column counts as one byte:
``repeat(name, 2000000)`` is still bounded by its count. Above ``max_value_bytes`` the call is refused;
inside an aggregate (``string_agg(repeat(name, 5000), ';')``), where every row adds one such value, the
limit is ``max_aggregated_value_bytes``.

The same rule multiplies the row counts of ``generate_series`` calls with literal bounds that share one
``SELECT`` (``FROM generate_series(1, 1000000) a, generate_series(1, 1000000) b``).

A count that is not a constant cannot be judged here; the cost gate and ``statement_timeout`` bound it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from gateway.safety import fold
from gateway.safety.context import Context
from gateway.safety.functions import AGGREGATES
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.rules.generate_series import series_rows
from gateway.safety.tree import descend, names, unwrap

AMPLIFIERS = frozenset({"repeat", "lpad", "rpad", "array_fill", "format"})

# Functions whose result has a small fixed size whatever their argument.
_SMALL_RESULT = frozenset({
    "length", "char_length", "character_length", "octet_length", "bit_length", "position", "strpos",
    "ascii", "count", "md5", "sha224", "sha256", "sha384", "sha512", "crc32", "crc32c", "array_length",
    "cardinality", "regexp_count", "regexp_instr", "regexp_like", "starts_with", "num_nulls", "num_nonnulls",
})
_PADDED_TYPES = frozenset({"bpchar", "char", "character"})
_BIT_TYPES = frozenset({"bit"})


def amplification(ctx: Context, policy: Policy) -> Iterator[Finding]:
    sizes = _Sizes()
    in_aggregate: set[int] = set()
    for call, _ in ctx.tree.funcs:
        if _name(call) in AGGREGATES:
            in_aggregate.update(id(c) for c in _calls_under(call.get("args", ())))
    for call, _ in ctx.tree.funcs:
        name = _name(call)
        if name not in AMPLIFIERS:
            continue
        size = sizes.of({"FuncCall": call})
        aggregated = id(call) in in_aggregate
        limit = policy.max_aggregated_value_bytes if aggregated else policy.max_value_bytes
        if size > limit:
            shown = "an unbounded value" if math.isinf(size) else \
                f"a value of at least {int(size):,} bytes (or array elements)"
            setting = "max_aggregated_value_bytes" if aggregated else "max_value_bytes"
            where = " inside an aggregate (once per row)" if aggregated else ""
            yield Finding("value_too_large", f"{name}() builds {shown}{where}; the limit is {limit:,} "
                          f"({setting}); use a smaller constant or raise the database's {setting}.",
                          name, ctx.position(call.get("location")))
    yield from _series_products(ctx, policy)


def _series_products(ctx: Context, policy: Policy) -> Iterator[Finding]:
    per_scope: dict[int, list[float]] = {}
    for call, scope in ctx.tree.funcs:
        if _name(call) == "generate_series":
            rows = series_rows(call)
            if rows is not None:
                per_scope.setdefault(scope, []).append(rows)
    for counts in per_scope.values():
        if len(counts) < 2:
            continue
        product = math.prod(counts)
        if product > policy.max_generate_series:
            yield Finding("generate_series_too_large", f"{len(counts)} generate_series() calls in one SELECT "
                          f"multiply to about {product:,.0f} rows; the limit is {policy.max_generate_series:,} "
                          "(max_generate_series).", "generate_series")


class _Sizes:
    """Lower bounds of value sizes, memoised per node (nested calls are visited once per enclosing call)."""

    def __init__(self) -> None:
        self._seen: dict[int, float] = {}

    def of(self, node: Any, depth: int = 0) -> float:
        key = id(node)
        if key not in self._seen:
            self._seen[key] = self._measure(node, depth) if depth < 100 else 1.0
        return self._seen[key]

    def _measure(self, node: Any, depth: int) -> float:
        kind, body = unwrap(node)
        if kind == "A_Const":
            value = fold.text(node)
            return float(len(value)) if value is not None else 0.0
        if kind == "TypeCast":
            inner = self.of(body.get("arg"), depth + 1)
            type_name = body.get("typeName", {})
            base = (names(type_name.get("names")) or [""])[-1].lower()
            mods = [fold.number(m) for m in type_name.get("typmods", ())]
            width = mods[0] if mods and mods[0] is not None else 0.0
            if base in _PADDED_TYPES:
                return max(inner, width)  # char(n) pads to n
            if base in _BIT_TYPES:
                return max(inner, width / 8)
            return inner
        if kind == "A_Expr" and names(body.get("name")) == ["||"]:
            return self.of(body.get("lexpr"), depth + 1) + self.of(body.get("rexpr"), depth + 1)
        if kind == "A_ArrayExpr":
            return float(sum(max(self.of(e, depth + 1), 1.0) for e in body.get("elements", ())))
        if kind == "FuncCall":
            return self._call(body, depth)
        if kind == "SubLink" and body.get("subLinkType") == "EXPR_SUBLINK":
            kind_s, select = unwrap(body.get("subselect"))
            targets = select.get("targetList", ())
            if kind_s == "SelectStmt" and len(targets) == 1:
                return self.of(unwrap(targets[0])[1].get("val"), depth + 1)
        if kind in ("CaseExpr", "CoalesceExpr", "MinMaxExpr", "CaseWhen"):
            children = [v for v in body.values() if isinstance(v, (dict, list))]
            flat = [c for v in children for c in (v if isinstance(v, list) else [v])]
            return max((self.of(c, depth + 1) for c in flat), default=1.0)
        return 1.0  # a column, a parameter, anything not known: at least a byte

    def _call(self, call: dict[str, Any], depth: int) -> float:
        name = _name(call)
        args = call.get("args", ())
        arg_sizes = [self.of(a, depth + 1) for a in args]
        first = arg_sizes[0] if arg_sizes else 1.0
        if name in _SMALL_RESULT:
            return 8.0
        if name == "repeat" and len(args) == 2:
            count = fold.number(args[1])
            return first * max(count, 0.0) if count is not None else first
        if name in ("lpad", "rpad") and len(args) >= 2:
            length = fold.number(args[1])
            return max(length, 0.0) if length is not None else first
        if name == "array_fill" and len(args) >= 2:
            return max(first, 1.0) * _elements(args[1])
        if name == "format" and args:
            pattern = fold.text(args[0])
            width = _format_width(pattern) if pattern is not None else 1.0
            if pattern is not None and "*" in pattern:  # '%*s': the width is an argument
                width += max((n for n in map(fold.number, args[1:]) if n is not None), default=0.0)
            return width + sum(arg_sizes[1:])
        if name in ("concat", "concat_ws"):
            return float(sum(arg_sizes))
        if name == "encode":
            return 2 * first  # hex doubles, base64 adds a third
        return max(arg_sizes, default=1.0)


def _name(call: dict[str, Any]) -> str:
    return (names(call.get("funcname")) or [""])[-1].lower()


def _calls_under(args: Any) -> Iterator[dict[str, Any]]:
    return (body for kind, body in descend(args) if kind == "FuncCall")


def _elements(dims: Any) -> float:
    """Elements of array_fill's dimension argument: ARRAY[a, b] or '{a,b}' folded; 1 when unknown."""
    kind, body = unwrap(dims)
    while kind == "TypeCast":  # '{90000000}'::int[]
        dims = body.get("arg")
        kind, body = unwrap(dims)
    counts: list[float | None]
    if kind == "A_ArrayExpr":
        counts = [fold.number(e) for e in body.get("elements", ())]
    else:
        literal = fold.text(dims)
        if literal is None or not literal.strip().startswith("{"):
            return 1.0
        counts = []
        for part in literal.strip().strip("{}").split(","):
            try:
                counts.append(float(part))
            except ValueError:
                counts.append(None)
    known = [max(c, 0.0) for c in counts if c is not None]
    return math.prod(known) if known else 1.0


def _format_width(pattern: str) -> float:
    """Sum of the literal widths in a format() pattern: '%1000000000s' pads to a billion characters."""
    total, i = float(len(pattern)), 0
    while i < len(pattern):
        if pattern[i] != "%":
            i += 1
            continue
        i += 1
        start = i
        while i < len(pattern) and (pattern[i].isdigit() or pattern[i] in "$-*"):
            i += 1
        spec = pattern[start:i]
        width = spec.rsplit("$", 1)[-1].lstrip("-")
        if width.isdigit():
            total += float(width)
        i += 1
    return total
