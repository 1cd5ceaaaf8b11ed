"""``generate_series`` with bounds that would produce a huge (or infinite) number of rows.

Only literal bounds are judged: numbers exactly, dates and timestamps with a literal interval step
approximately (a month counts as 30 days). Computed bounds (``now() - interval '1 year'``, a subquery)
are the everyday calendar-table idiom and stay allowed; the statement timeout and the row cap bound them at
execution. A literal ``'infinity'`` bound is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal, InvalidOperation

from gateway.safety import fold
from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import JSON, names, unwrap

_UNIT_SECONDS = {
    "microsecond": 1e-6, "millisecond": 1e-3, "second": 1, "sec": 1, "s": 1, "minute": 60, "min": 60,
    "m": 60, "hour": 3600, "h": 3600, "day": 86400, "d": 86400, "week": 604800, "w": 604800,
    "month": 2592000, "mon": 2592000, "year": 31536000, "y": 31536000,
}


def generate_series(ctx: Context, policy: Policy) -> Iterator[Finding]:
    for call, _ in ctx.tree.funcs:
        if (names(call.get("funcname")) or [""])[-1].lower() != "generate_series":
            continue
        rows = series_rows(call)
        if rows is not None and rows > policy.max_generate_series:
            shown = "infinitely many" if rows == float("inf") else f"about {int(rows):,}"
            yield Finding("generate_series_too_large", f"generate_series() would produce {shown} rows; "
                          f"the limit is {policy.max_generate_series:,} (max_generate_series).",
                          "generate_series", ctx.position(call.get("location")))


def series_rows(call: JSON) -> float | None:
    """Rows a generate_series call with literal bounds produces (inf for an infinite bound), else None."""
    args = [_literal(a) for a in call.get("args", ())]
    if len(args) < 2:
        return None
    return _rows(args[0], args[1], args[2] if len(args) > 2 else 1)


def _literal(node: object) -> object:
    kind, body = unwrap(node)
    if kind == "TypeCast":
        return _literal(body.get("arg"))
    if kind != "A_Const":
        folded = fold.number(node)  # 100000 * 100000 is as literal as 10000000000
        return None if folded is None or folded != folded else Decimal(folded)
    if "ival" in body:
        return Decimal(body["ival"].get("ival", 0))
    if "fval" in body:
        try:
            return Decimal(body["fval"].get("fval", "0"))
        except InvalidOperation:
            return None
    if "sval" in body:
        return str(body["sval"].get("sval", ""))
    return None


def _rows(start: object, stop: object, step: object) -> float | None:
    if isinstance(start, str) and start.strip().lower().lstrip("+-") == "infinity":
        return float("inf")
    if isinstance(stop, str) and stop.strip().lower().lstrip("+-") == "infinity":
        return float("inf")
    if isinstance(start, Decimal) and isinstance(stop, Decimal) and isinstance(step, (Decimal, int)):
        if step == 0:
            return None
        return max(float((stop - start) / step) + 1, 0.0)
    if isinstance(start, str) and isinstance(stop, str) and isinstance(step, str):
        seconds = _interval_seconds(step)
        try:
            span = (datetime.fromisoformat(stop.strip()) - datetime.fromisoformat(start.strip()))
            seconds_span = span.total_seconds()
        except (ValueError, TypeError):
            return None
        if not seconds:
            return None
        return max(seconds_span / seconds + 1, 0.0)
    return None


def _interval_seconds(text: str) -> float | None:
    """Seconds in a simple interval literal such as '1 day' or '15 minutes 30 seconds'; None otherwise."""
    words = text.replace("@", " ").split()
    if not words or len(words) % 2:
        return None
    total = 0.0
    for amount, unit in zip(words[::2], words[1::2], strict=True):
        unit = unit.lower().rstrip("s") or "s"
        try:
            total += float(amount) * _UNIT_SECONDS[unit]
        except (ValueError, KeyError):
            return None
    return abs(total)
