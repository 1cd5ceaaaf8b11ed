"""Tables and columns that the database's policy hides, judged on column lineage (``gateway.safety.lineage``).

A hidden column may feed nothing: no output, predicate, join, grouping, ordering, window, function
argument or cast, in any scope. Every base-table read the lineage pass finds is asked here: a read of a
hidden column, a read of every column (star, whole row, column-alias list, NATURAL join) of a table that
has hidden columns, and a reference the pass could not bind are refused. A hidden table is refused
wherever it appears, as a relation or as a row type (``NULL::secrets`` would show its columns).
Table and column names are compared case-insensitively and a table is matched by its bare name in any
schema, which errs on the safe side (``"EMAIL"`` and ``public.customers`` are treated as ``email`` and ``customers``).
"""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.context import Context
from gateway.safety.functions import WHOLE_ROW_FUNCTIONS
from gateway.safety.lineage import bind
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import names


def hidden(ctx: Context, policy: Policy) -> Iterator[Finding]:
    if not policy.hidden_tables and not policy.hidden_columns:
        return
    yield from _tables(ctx, policy)
    cols: dict[str, set[str]] = {}
    for entry in policy.hidden_columns:
        table, _, column = entry.casefold().rpartition(".")
        cols.setdefault(table.rsplit(".", 1)[-1] or "*", set()).add(column)
    everywhere = cols.pop("*", set())
    if not cols and not everywhere:
        return
    seen: set[tuple[str | None, str | None, str, str]] = set()
    watched = None if everywhere else frozenset(cols)
    if watched is not None and not any(rel.get("relname", "").casefold() in watched for rel, _ in ctx.tree.relations):
        return  # every base-table read goes through a relation reference; none names a table with hidden columns
    for read in bind(ctx.statement.query, WHOLE_ROW_FUNCTIONS | policy.extra_functions, watched):
        key = (read.table, read.column, read.clause, read.text)
        if key in seen:
            continue
        seen.add(key)
        pos = ctx.position(read.location)
        if read.table is None:
            yield Finding("hidden_column", f"{read.text} in the {read.clause} cannot be bound to the columns it "
                          "reads, so it is refused while the policy hides columns.", read.text, pos)
            continue
        hides = cols.get(read.table, set()) | everywhere
        if not hides:
            continue
        if read.column is None:
            shown = ", ".join(sorted(f"{read.table}.{c}" for c in hides))
            yield Finding("hidden_column", f"{read.text} in the {read.clause} reads every column of {read.table}, "
                          f"including hidden {shown}; name the columns instead.", read.text, pos)
        elif read.column in hides:
            yield Finding("hidden_column", f"{read.text} in the {read.clause} reads {read.table}.{read.column}, "
                          "which the database's policy hides.", read.text, pos)


def _tables(ctx: Context, policy: Policy) -> Iterator[Finding]:
    full = {t.casefold() for t in policy.hidden_tables}
    bare = {t.rsplit(".", 1)[-1] for t in full}
    for rel, _ in ctx.tree.relations:
        name = rel.get("relname", "").casefold()
        schema = (rel.get("schemaname") or "").casefold()
        # A schema-qualified entry hides the bare name too: an unqualified name may resolve to any schema on
        # the search path. A CTE named like a hidden table is refused as well (safe side).
        if name in bare or (schema and f"{schema}.{name}" in full):
            shown = f"{schema}.{name}" if schema else name
            yield Finding("hidden_table", f"Table {shown} is hidden by the database's policy.", shown,
                          ctx.position(rel.get("location")))
    for type_name in ctx.tree.types:
        parts = [p.casefold() for p in names(type_name.get("names"))]
        if parts and (parts[-1] in bare or ".".join(parts[-2:]) in full):
            yield Finding("hidden_table", f"The row type of hidden table {parts[-1]} is refused.", parts[-1],
                          ctx.position(type_name.get("location")))
