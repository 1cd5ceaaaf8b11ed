"""Row counts the text shows: set-returning functions in one FROM (or target list) whose rows multiply.

``FROM unnest(array_fill(1, ARRAY[100000])) a, unnest(array_fill(1, ARRAY[100000])) b`` is ten billion rows
from a few bytes of SQL; so is a cross join of ``string_to_table`` over constant strings. Every
set-returning function gets a row bound from its arguments (:meth:`gateway.safety.sizes.Sizes.function_rows`:
``unnest`` at most the elements of its array, ``string_to_table`` and ``regexp_split_to_table`` at most one
row per byte plus one, ``json*_array_elements`` and ``jsonb_each`` one per byte of the document,
``generate_series`` from its folded bounds), and the rows of one SELECT are the product of its FROM items
and target-list functions. Above ``max_generate_series`` it is ``rows_too_large``. Tables have no row count
in the text: a FROM that reads one is left to the cost gate (and a product with a table to the cartesian
rule); a function over a column (``unnest(o.tags)``) expands each row of its side, stored data.

A single ``generate_series`` is ``generate_series_too_large``'s (its own rule); everything else is judged
here.
"""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.context import Context
from gateway.safety.functions import SET_RETURNING
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.sizes import Sizes
from gateway.safety.tree import JSON, descend, names, unwrap


def rows(ctx: Context, policy: Policy) -> Iterator[Finding]:
    sizes = Sizes(ctx.tree, policy)
    limit = policy.max_generate_series
    for select in ctx.tree.selects:
        calls = _set_returning(select.body)
        if not calls or (len(calls) == 1 and calls[0] == "generate_series"):
            continue
        bound = sizes.rows_of_from(select.body)
        if bound is None or bound.bound <= limit:
            continue
        shown = "infinitely many" if bound.bound == float("inf") else f"about {bound.bound:,.0f}"
        per = " per row of the tables it reads" if bound.table else ""
        code = "generate_series_too_large" if set(calls) == {"generate_series"} else "rows_too_large"
        yield Finding(code, f"The set-returning functions of one SELECT ({', '.join(calls)}) produce "
                      f"{shown} rows{per}; the limit is {limit:,} (max_generate_series).", ", ".join(calls))


def _set_returning(select: JSON) -> list[str]:
    """Names of the set-returning functions in one SELECT's FROM and target list (not in its subqueries)."""
    out: list[str] = []
    nodes = [unwrap(unwrap(t)[1].get("val")) for t in select.get("targetList", ()) or ()]
    for item in select.get("fromClause", ()) or ():
        nodes.extend((k, b) for k, b in descend(item) if k == "RangeFunction")
    for kind, body in nodes:
        if kind == "RangeFunction":
            for k, call in descend(body.get("functions")):
                if k == "FuncCall" and (names(call.get("funcname")) or [""])[-1].lower() in SET_RETURNING:
                    out.append(names(call["funcname"])[-1].lower())
        elif kind == "FuncCall" and (names(body.get("funcname")) or [""])[-1].lower() in SET_RETURNING:
            out.append(names(body["funcname"])[-1].lower())
    return out
