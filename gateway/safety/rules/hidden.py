"""Tables and columns that the database's policy hides.

The checker has no schema, so it errs on the safe side: ``*`` over a table with hidden columns, ``t.*``,
a whole-row reference (``to_jsonb(t)``), ``USING (col)`` and a NATURAL join that touches such a table are
refused, as is an unqualified column whose name is hidden in any table the query reads.
"""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import JSON, names, unwrap


def hidden(ctx: Context, policy: Policy) -> Iterator[Finding]:
    if not policy.hidden_tables and not policy.hidden_columns:
        return
    yield from _tables(ctx, policy)
    cols: dict[str, set[str]] = {}
    for entry in policy.hidden_columns:
        parts = entry.lower().split(".")
        cols.setdefault(parts[-2] if len(parts) > 1 else "*", set()).add(parts[-1])
    if not cols:
        return
    everywhere = cols.get("*", set())
    aliases: dict[str, set[str]] = {}
    present: set[str] = set()
    for rel, _ in ctx.tree.relations:
        name = rel.get("relname", "").lower()
        aliases.setdefault(name, set()).add(name)
        alias = rel.get("alias", {}).get("aliasname")
        if alias:
            aliases.setdefault(alias.lower(), set()).add(name)
        if name in cols or everywhere:
            present.add(name)
    if not present:
        return
    hidden_names = everywhere.union(*(cols.get(t, set()) for t in present))

    def hides(tables: set[str]) -> list[str]:
        return sorted(f"{t}.{c}" for t in tables for c in cols.get(t, set()) | everywhere)

    for ref, scope in ctx.tree.columns:
        fields = ref.get("fields", ())
        parts = [p.lower() for p in names(fields)]
        star = any("A_Star" in f for f in fields if isinstance(f, dict))
        pos = ctx.position(ref.get("location"))
        if star:
            tables = _from_tables(ctx.tree.selects[scope].body) if not parts and scope >= 0 else \
                aliases.get(parts[-1], set()) if parts else set()
            exposed = hides(tables & present)
            if exposed:
                shown = f"{parts[-1]}.*" if parts else "*"
                yield Finding("hidden_column", f"{shown} would expose hidden column {', '.join(exposed)}; "
                              "name the columns instead.", shown, pos)
        elif len(parts) == 1:
            (col,) = parts
            if col in hidden_names:
                yield Finding("hidden_column", f"Column {col} is hidden by the database's policy.", col, pos)
            elif hides(aliases.get(col, set()) & present):
                yield Finding("hidden_column", f"The whole-row reference {col} would expose hidden columns.",
                              col, pos)
        elif parts:
            qualifier, col = parts[-2], parts[-1]
            named = aliases.get(qualifier)
            # An unknown qualifier is a subquery or CTE; its own body is checked, but err on the safe side.
            if named:
                hit = col in everywhere or any(col in cols.get(t, ()) for t in named)
            else:
                hit = col in hidden_names
            if hit:
                shown = f"{qualifier}.{col}"
                yield Finding("hidden_column", f"Column {shown} is hidden by the database's policy.", shown,
                              pos)
    for join in ctx.tree.joins:
        for col in names(join.get("usingClause")):
            if col.lower() in hidden_names:
                yield Finding("hidden_column", f"JOIN ... USING ({col}) reads a hidden column.", col)
        if join.get("isNatural") and _join_tables(join) & present:
            yield Finding("hidden_column", "A NATURAL JOIN over a table with hidden columns may join on "
                          "them; use JOIN ... ON with named columns.", "NATURAL JOIN")


def _tables(ctx: Context, policy: Policy) -> Iterator[Finding]:
    full = {t.lower() for t in policy.hidden_tables}
    bare = {t.rsplit(".", 1)[-1] for t in full}
    for rel, _ in ctx.tree.relations:
        name = rel.get("relname", "").lower()
        schema = (rel.get("schemaname") or "").lower()
        # An unqualified name may resolve to any schema on the search path, so 'sales.secrets' hides it too.
        if name in full or (schema and f"{schema}.{name}" in full) or (not schema and name in bare):
            shown = f"{schema}.{name}" if schema else name
            yield Finding("hidden_table", f"Table {shown} is hidden by the database's policy.", shown,
                          ctx.position(rel.get("location")))


def _from_tables(select: JSON) -> set[str]:
    """Relations a bare ``*`` in this SELECT expands: its FROM items, through joins, not into subqueries."""
    out: set[str] = set()
    for item in select.get("fromClause", ()):
        out |= _join_tables(unwrap(item)[1]) if unwrap(item)[0] == "JoinExpr" else _relname(item)
    return out


def _join_tables(join: JSON) -> set[str]:
    out: set[str] = set()
    for side in (join.get("larg"), join.get("rarg")):
        kind, body = unwrap(side)
        out |= _join_tables(body) if kind == "JoinExpr" else _relname(side)
    return out


def _relname(node: object) -> set[str]:
    kind, body = unwrap(node)
    return {body.get("relname", "").lower()} if kind == "RangeVar" else set()

