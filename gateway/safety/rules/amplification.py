"""Values a query makes the database build: refused when the static size analysis cannot bound them.

:mod:`gateway.safety.sizes` gives every expression an upper bound from the declared size rules of the
functions and operators it uses. A value is refused with ``value_too_large`` where it is built (the
innermost expression whose bound is too large, so one finding names the culprit):

- its bound is above ``max_value_bytes`` (a stored value counting as ``assumed_value_bytes``):
  ``repeat('ab', 600000000)``, ``replace(repeat('a', 99000), 'a', repeat('b', 1000))``,
  ``9.9::numeric ^ 1000000``, ``factorial(200000)``;
- its bound is unknown: a count into an amplifier that is neither a constant nor capped by one
  (``lpad('', (SELECT count(*)::int FROM order_items) * 15000)``; ``LEAST(expr, 500)`` caps it);
- it holds more than :data:`~gateway.safety.sizes.MAX_TABLE_COPIES` copies of the scanned tables' data
  (``repeat('#', count(*) * 15000)``, ``string_agg(repeat(name, 5000), ',')`` over table rows);
- inside an aggregate over table rows, its constant part is above ``max_aggregated_value_bytes``.

``statement_timeout`` bounds time, not memory: what this rule lets through is bounded in size by the text.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.sizes import MAX_TABLE_COPIES, RULES, Size, Sizes
from gateway.safety.tree import descend, names

_JUDGED = ("FuncCall", "A_Expr", "TypeCast", "SubLink", "A_ArrayExpr")


def amplification(ctx: Context, policy: Policy) -> Iterator[Finding]:
    sizes = Sizes(ctx.tree, policy)
    problems: dict[int, str] = {}
    nodes: list[tuple[str, dict[str, Any]]] = [(k, b) for k, b in descend(ctx.statement.query) if k in _JUDGED]
    for kind, body in nodes:
        why = _problem(sizes.of({kind: body}), policy, sizes.per_value)
        if kind == "FuncCall" and RULES.get(_name(body)) == "aggregate" and not why:
            why = _aggregate_problem(sizes, body, policy)
        if why:
            problems[id(body)] = why
    for kind, body in nodes:
        found = problems.get(id(body))
        if not found or any(id(b) in problems for k, b in _below(body) if k in _JUDGED):
            continue  # reported where the value is built, not at every expression around it
        yield Finding("value_too_large", f"{_shown(kind, body)} {found}", _shown(kind, body),
                      ctx.position(body.get("location")))


def _problem(size: Size, policy: Policy, per_value: float) -> str:
    if not size.bounded:
        reason = size.why or "the analysis cannot bound its size"
        return f"builds a value of unbounded size: {reason}. statement_timeout bounds time, not memory."
    if size.table > MAX_TABLE_COPIES:
        return (f"builds a value of about {size.table:,.0f} times the data of the tables it reads (the limit is "
                f"{MAX_TABLE_COPIES:,.0f}); use smaller constants or cap counts with LEAST(expr, N).")
    built = size.bytes(per_value)
    if built > policy.max_value_bytes:
        return (f"builds a value of up to {built:,.0f} bytes (or array elements, or digits), a stored value "
                f"counting as {int(per_value):,} (assumed_value_bytes); the limit is {policy.max_value_bytes:,} "
                "(max_value_bytes): use a smaller constant or raise the database's max_value_bytes.")
    return ""


def _aggregate_problem(sizes: Sizes, call: dict[str, Any], policy: Policy) -> str:
    """Inside an aggregate every row adds one value: its constant part is limited on its own."""
    per_row = Size()
    for arg in call.get("args", ()):
        per_row = per_row + sizes.of(arg)
    if math.isfinite(per_row.const) and per_row.const > policy.max_aggregated_value_bytes:
        return (f"adds {per_row.const:,.0f} bytes built from constants once per row; the limit is "
                f"{policy.max_aggregated_value_bytes:,} (max_aggregated_value_bytes).")
    return ""


def _below(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(k, b) for k, b in descend(list(v for v in body.values() if isinstance(v, (dict, list))))]


def _name(call: dict[str, Any]) -> str:
    return (names(call.get("funcname")) or [""])[-1].lower()


def _shown(kind: str, body: dict[str, Any]) -> str:
    if kind == "FuncCall":
        return f"{_name(body)}()"
    if kind == "A_Expr":
        return f"the {'.'.join(names(body.get('name')))} operator"
    if kind == "TypeCast":
        type_name = ".".join(names(body.get("typeName", {}).get("names"))) or "a type"
        return f"the cast to {type_name}"
    if kind == "SubLink":
        return "ARRAY(subquery)"
    return "ARRAY[...]"



