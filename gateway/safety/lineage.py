"""Column lineage: which base-table columns each reference in a query may read, through every scope.

One pass over Postgres's own tree binds every column reference, star and whole-row reference to the base
tables and columns it may read, through the name-binding forms Postgres has: table aliases with column
lists, join aliases with and without column lists (and ``USING (...) AS u``), subqueries, CTEs and VALUES,
set-returning functions, LATERAL, NATURAL/USING merged columns, composite field selection ``(x).f`` and
``(x).*``, whole-row references (bare ``t``, ``t.*``, ``to_jsonb(t)``), set operations, correlated
subqueries and every clause (ORDER BY and GROUP BY by output name included).

The check has no schema, so where binding needs the catalog the pass keeps every reading Postgres could
choose, never just the likeliest one:

- an unqualified name may be a column of any base table in any enclosing scope (a name a subquery's own
  tables lack resolves outward), and a bare name may also be a whole-row reference to a range of that name;
- ``x.y`` may be column ``y`` of range ``x``, field ``y`` of a column ``x``, or, when ``y`` names a function or
  type, the functional notation ``y(x)`` over the whole row (``c.text`` is ``text(c)`` in Postgres);
- ``*`` over a base table, a column-alias list on it (``employees AS e(i, f, ...)``: positions unknown), and
  NATURAL over base tables (common columns unknown) read every column of the table. A NATURAL join trusts
  the other side's output names only when the list is complete (subqueries, VALUES, CTEs without SEARCH or
  CYCLE); a function in FROM or a join alias with a column list may add or rename columns, so it is not.

Derived tables (subqueries, CTEs, VALUES, functions in FROM) are safe by induction: every base column they
output is read, and bound, inside them, where it is judged like any other. So a read is always a base
table's column, a base table's whole row, or ``unbound`` (a FROM item this pass does not know), which the
rules refuse. Over-approximating is the safe direction throughout: a reading that Postgres would not choose
can only add refusals. One star is no read: ``*`` / ``t.*`` in the select list of a plain EXISTS
subquery, whose output is never evaluated (``_exists_without_stars``). CTE names are matched exactly as
Postgres does (a quoted ``"Customers"`` is not a CTE ``customers``), while base-table names are compared
case-insensitively by the rules.

>>> [(r.table, r.column, r.clause) for r in bind(_parse("SELECT e.s FROM employees AS e(i, s)"))]
[('employees', None, 'FROM'), ('employees', 'e', 'select list'), ('employees', 's', 'select list')]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gateway.safety.functions import WHOLE_ROW_FUNCTIONS
from gateway.safety.tree import JSON, names, unwrap

_CLAUSES = {
    "targetList": "select list", "whereClause": "WHERE", "groupClause": "GROUP BY", "havingClause": "HAVING",
    "sortClause": "ORDER BY", "distinctClause": "DISTINCT ON", "windowClause": "WINDOW",
    "limitCount": "LIMIT", "limitOffset": "OFFSET", "valuesLists": "VALUES", "quals": "JOIN ... ON",
    "agg_filter": "FILTER", "over": "OVER",
}
# Keys whose values hold only names, never a column reference: not worth walking.
_NAMES_ONLY = frozenset({"typeName", "funcname", "name", "alias", "collname"})
_LEAVES = frozenset({"A_Const", "String", "ParamRef", "SQLValueFunction", "A_Star"})
# Clauses through which a SELECT's own output rows (by name or position) can shape which rows it returns.
_SHAPES_ROWS = ("groupClause", "havingClause", "distinctClause", "windowClause", "sortClause", "limitCount",
                "limitOffset", "valuesLists")


@dataclass(frozen=True, slots=True)
class Read:
    """One base-table read: ``column`` None means every column (star, whole row, renamed positions);
    ``table`` None means a reference this pass could not bind, which must be refused."""

    table: str | None
    column: str | None
    clause: str
    text: str
    location: int | None = None


@dataclass(slots=True)
class _Out:
    reads: list[Read]
    row_functions: frozenset[str]
    tables: frozenset[str] | None  # only reads of these base tables are kept (None: all)

    def emit(self, table: str | None, column: str | None, clause: str, text: str, location: int | None = None) -> None:
        if table is None or self.tables is None or table in self.tables:
            self.reads.append(Read(table, column, clause, text, location))


@dataclass(slots=True)
class Range:
    """A FROM item: a base table (``table`` set), a derived table, or a join over ``leaves``."""

    names: frozenset[str]  # what it may be referenced by (alias, relation name), case-folded
    table: str | None = None  # case-folded bare name of a base table
    leaves: tuple[Range, ...] = ()  # for a join: every range inside it
    columns: tuple[str, ...] | None = None  # known output names of a derived table (None: unknown)
    watched: bool = False  # a base table (or a join over one) whose reads are kept
    renamed: bool = False  # a join whose alias has a column list: its leaves' names are not its own

    def bases(self) -> list[str]:
        if self.table is not None:
            return [self.table]
        return [leaf.table for leaf in self.leaves if leaf.table is not None]


@dataclass(slots=True)
class Scope:
    ranges: list[Range] = field(default_factory=list)  # every FROM item of one SELECT, joins included
    parent: Scope | None = None
    ctes: dict[str, tuple[str, ...] | None] = field(default_factory=dict)  # visible CTEs -> output names


def bind(stmt: JSON, row_functions: frozenset[str] = WHOLE_ROW_FUNCTIONS,
         tables: frozenset[str] | None = None) -> list[Read]:
    """Every base-table read of a statement node (``{"SelectStmt": ...}``), in no particular order.

    ``row_functions`` are the names that ``x.NAME`` may call over x's whole row (a DBA's own functions
    may take a table's row type too). ``tables`` (case-folded bare names) keeps only reads of those
    tables, and the unbound ones: the rules ask about tables with hidden columns only.
    """
    out = _Out([], row_functions, tables)
    stack: list[tuple[Any, Scope, str]] = [(stmt, Scope(), "select list")]
    pop, push = stack.pop, stack.append
    while stack:
        value, scope, clause = pop()
        if type(value) is list:
            for item in value:
                if type(item) is dict or type(item) is list:
                    push((item, scope, clause))
            continue
        kind, body = "", value
        if len(value) == 1:
            for only_key, only in value.items():
                if type(only) is dict and only_key[:1].isupper():
                    kind, body = only_key, only
        if kind == "SelectStmt":
            _select(body, scope, push, out)
            continue
        if kind == "ColumnRef":
            _resolve(body.get("fields", ()), scope, clause, body.get("location"), out)
            continue
        if kind == "A_Indirection" and _field_selection(body, scope, clause, push, out):
            continue
        if kind == "SubLink" and body.get("subLinkType") == "EXISTS_SUBLINK":
            body = _exists_without_stars(body)
        if kind in _LEAVES:
            continue
        for key, child in body.items():
            if (type(child) is dict or type(child) is list) and key not in _NAMES_ONLY:
                push((child, scope, _CLAUSES.get(key, clause)))
    return out.reads


def _select(body: JSON, outer: Scope, push: Any, out: _Out) -> None:
    ctes = outer.ctes
    with_clause = body.get("withClause")
    if with_clause:
        items = [unwrap(c)[1] for c in with_clause.get("ctes", ())]
        defined = [(c.get("ctename", ""), _cte_columns(c)) for c in items]
        recursive = bool(with_clause.get("recursive"))
        for i, cte in enumerate(items):
            # A CTE sees the ones before it (all of them under RECURSIVE), never itself otherwise: inside
            # 'WITH customers AS (SELECT ... FROM customers)' the inner name is the base table.
            visible = {**ctes, **dict(defined if recursive else defined[:i])}
            push((cte.get("ctequery"), Scope(parent=outer, ctes=visible), "WITH"))
        ctes = {**ctes, **dict(defined)}
    if body.get("op", "SETOP_NONE") != "SETOP_NONE":
        arms = Scope(parent=outer, ctes=ctes)
        for arm in ("larg", "rarg"):
            if isinstance(body.get(arm), dict):
                _select(body[arm], arms, push, out)
        first = body
        while first.get("op", "SETOP_NONE") != "SETOP_NONE" and isinstance(first.get("larg"), dict):
            first = first["larg"]
        for key in ("sortClause", "limitCount", "limitOffset"):
            if key in body:
                push((_by_input(body[key], _aliases(first), key), arms, _CLAUSES[key]))
        return
    scope = Scope(parent=outer, ctes=ctes)
    for item in body.get("fromClause", ()):
        _from_item(item, scope, push, out)
    aliases = _aliases(body)
    for key, child in body.items():
        if key in ("withClause", "fromClause") or not (type(child) is dict or type(child) is list):
            continue
        clause = _CLAUSES.get(key, "select list")
        if aliases and key in ("sortClause", "distinctClause", "groupClause"):
            for name in _output_refs(child, aliases, key):
                # GROUP BY prefers an input column of that name (never a whole row): bind it as a column.
                _resolve_column(name, scope, clause, out)
            child = _by_input(child, aliases, key)
        push((child, scope, clause))


def _exists_without_stars(sublink: JSON) -> JSON:
    """An EXISTS sublink minus the ``*`` and ``t.*`` items of its subquery's select list, when they are data-free.

    EXISTS asks only whether its subquery returns a row. In a plain SELECT (no set operation, grouping,
    DISTINCT, window, ORDER BY, LIMIT or OFFSET, which could compare, group or order the star's columns) a
    star adds no row and raises no error, so its columns reach nothing; every other item and clause is bound.
    """
    kind, select = unwrap(sublink.get("subselect"))
    if kind != "SelectStmt" or select.get("op", "SETOP_NONE") != "SETOP_NONE":
        return sublink
    if any(select.get(key) for key in _SHAPES_ROWS):
        return sublink
    kept = [t for t in select.get("targetList", ()) if not _is_star(t)]
    return {**sublink, "subselect": {"SelectStmt": {**select, "targetList": kept}}}


def _is_star(target: Any) -> bool:
    """A select-list item that is exactly ``*`` or ``qualifier.*`` (not ``(x).*``, not an expression over it)."""
    kind, res = unwrap(target)
    if kind != "ResTarget" or res.get("name") or res.get("indirection"):
        return False
    vkind, val = unwrap(res.get("val"))
    fields: list[Any] = val.get("fields", []) if vkind == "ColumnRef" else []
    return bool(fields) and unwrap(fields[-1])[0] == "A_Star"


def _aliases(body: JSON) -> frozenset[str]:
    """Output names given with AS in a SELECT's list: ORDER BY and DISTINCT ON name them first."""
    return frozenset(unwrap(t)[1].get("name") or "" for t in body.get("targetList", ())) - {""}


def _bare_name(item: Any, key: str) -> str | None:
    node = unwrap(item)[1].get("node") if key == "sortClause" else item
    kind, ref = unwrap(node)
    fields: list[Any] = ref.get("fields", []) if kind == "ColumnRef" else []
    parts = names(fields)
    return parts[0] if len(fields) == 1 and len(parts) == 1 else None


def _output_refs(items: Any, aliases: frozenset[str], key: str) -> list[str]:
    if key != "groupClause" or not isinstance(items, list):
        return []
    return [name for item in items if (name := _bare_name(item, key)) in aliases and name is not None]


def _by_input(items: Any, aliases: frozenset[str], key: str) -> Any:
    """The items of ORDER BY / DISTINCT ON / GROUP BY that are not a bare AS-name of the select list (those
    read only the select list, which is bound already)."""
    if key not in ("sortClause", "distinctClause", "groupClause") or not isinstance(items, list) or not aliases:
        return items
    return [item for item in items if _bare_name(item, key) not in aliases]


def _from_item(item: Any, scope: Scope, push: Any, out: _Out) -> Range:
    kind, body = unwrap(item)
    alias = body.get("alias") or {}
    alias_name = alias.get("aliasname")
    colnames = alias.get("colnames")
    location = body.get("location")
    if kind == "RangeVar":
        relname = body.get("relname", "")
        if not body.get("schemaname") and not body.get("catalogname") and relname in scope.ctes:
            rng = Range(_names(alias_name or relname), columns=_renamed(scope.ctes[relname], colnames))
        else:
            table = relname.casefold()
            rng = Range(_names(alias_name, relname), table=table,
                        watched=out.tables is None or table in out.tables)
            if colnames:
                # Which base column each new name stands for needs the catalog: every column may be read.
                shown = f"{relname} AS {alias_name}({', '.join(names(colnames))})"
                out.emit(table, None, "FROM", shown, location)
    elif kind == "RangeSubselect":
        rng = Range(_names(alias_name), columns=_renamed(_outputs(body.get("subquery")), colnames))
        push((body.get("subquery"), scope, "FROM"))
    elif kind in ("RangeFunction", "RangeTableFunc", "JsonTable"):
        # Its rows come from its arguments, which are bound here like any expression (LATERAL or not).
        # Its output names stay unknown even with an alias list: the list may rename only the first columns
        # (ROWS FROM, XMLTABLE and JSON_TABLE columns, WITH ORDINALITY, a record's definition list add more).
        fallback = _function_name(body) if kind == "RangeFunction" else None
        rng = Range(_names(alias_name or fallback))
        for key, child in body.items():
            if key != "alias" and (type(child) is dict or type(child) is list):
                push((child, scope, "FROM"))
    elif kind == "RangeTableSample":
        rng = _from_item(body.get("relation"), scope, push, out)
        push(([body.get("args"), body.get("repeatable")], scope, "TABLESAMPLE"))
        return rng
    elif kind == "JoinExpr":
        return _join(body, scope, push, out)
    else:
        out.reads.append(Read(None, None, "FROM", kind or "an unknown FROM item", location))
        rng = Range(frozenset())
    scope.ranges.append(rng)
    return rng


def _join(body: JSON, scope: Scope, push: Any, out: _Out) -> Range:
    start = len(scope.ranges)
    left = _from_item(body.get("larg"), scope, push, out)
    middle = len(scope.ranges)
    right = _from_item(body.get("rarg"), scope, push, out)
    left_leaves = [r for r in scope.ranges[start:middle] if not r.leaves]
    right_leaves = [r for r in scope.ranges[middle:] if not r.leaves]
    leaves = tuple(left_leaves + right_leaves)
    if "quals" in body:
        push((body["quals"], scope, "JOIN ... ON"))
    using = names(body.get("usingClause"))
    for col in using:
        for leaf in leaves:
            if leaf.table is not None:
                out.emit(leaf.table, col.casefold(), "JOIN ... USING", f"USING ({col})")
    if body.get("isNatural"):
        left_known = _known(left, scope.ranges[start:middle])
        common = _common(left_known, _known(right, scope.ranges[middle:]))
        for leaf in leaves:
            if leaf.table is None:
                continue
            if common is None:
                out.emit(leaf.table, None, "NATURAL JOIN", "NATURAL JOIN")
            else:
                for c in common:
                    out.emit(leaf.table, c.casefold(), "NATURAL JOIN", "NATURAL JOIN")
    alias = body.get("alias") or {}
    if alias.get("colnames"):
        shown = f"AS {alias.get('aliasname')}({', '.join(names(alias['colnames']))})"
        for leaf in leaves:
            for t in leaf.bases():
                out.emit(t, None, "FROM", shown)
    watched = any(leaf.watched for leaf in leaves)
    joined = Range(_names(alias.get("aliasname")), leaves=leaves, watched=watched,
                   renamed=bool(alias.get("colnames")))
    scope.ranges.append(joined)
    using_alias = (body.get("join_using_alias") or {}).get("aliasname")
    if using_alias:
        scope.ranges.append(Range(_names(using_alias), leaves=leaves, watched=watched))
    return joined


def _resolve(fields: Any, scope: Scope, clause: str, location: int | None, out: _Out) -> None:
    parts: list[str] = []
    star = False
    for f in fields:
        kind, body = unwrap(f)
        if kind == "String":
            parts.append(body.get("sval", "").casefold())
        elif kind == "A_Star":
            star = True
            break
        else:  # pragma: no cover - the grammar only puts names and * in a column reference
            out.reads.append(Read(None, None, clause, "an unknown column reference", location))
            return
    text = ".".join(parts + (["*"] if star else []))
    if star and not parts:
        # A bare * expands the FROM items of its own SELECT, not those of enclosing ones.
        for rng in scope.ranges:
            if rng.watched and rng.table is not None:
                out.emit(rng.table, None, clause, "*", location)
        return
    levels = _levels(scope)
    if not star or len(parts) == 1:
        # parts[0] as a column of any base table in any enclosing scope (the rest are field selections);
        # ``(address).*`` expands the fields of a composite column.
        for level in levels:
            for rng in level.ranges:
                if rng.watched and rng.table is not None:
                    out.emit(rng.table, parts[0], clause, text, location)
    # parts[k-1] as a range name (parts before it being schema and catalog), parts[k] as its column.
    for k in range(1, min(len(parts), 3) + 1):
        qualifier = parts[k - 1]
        column = parts[k] if k < len(parts) else None
        for level in levels:
            for rng in level.ranges:
                if not rng.watched or qualifier not in rng.names:
                    continue
                for table in rng.bases():
                    out.emit(table, column, clause, text, location)
                    if column is not None and column in out.row_functions:
                        out.emit(table, None, clause, f"{text} (as {column}({qualifier}))", location)


def _resolve_column(name: str, scope: Scope, clause: str, out: _Out) -> None:
    """A bare name that Postgres may only read as a column of some FROM item (no whole-row reading)."""
    for level in _levels(scope):
        for rng in level.ranges:
            if rng.watched and rng.table is not None:
                out.emit(rng.table, name.casefold(), clause, name)


def _field_selection(body: JSON, scope: Scope, clause: str, push: Any, out: _Out) -> bool:
    """``(c).email`` and ``(c).*`` read what ``c.email`` and ``c.*`` read; other indirections are walked."""
    kind, ref = unwrap(body.get("arg"))
    if kind != "ColumnRef" or any("A_Star" in f for f in ref.get("fields", ()) if isinstance(f, dict)):
        return False
    fields = list(ref.get("fields", ()))
    rest = []
    for i, item in enumerate(body.get("indirection", ())):
        ikind = unwrap(item)[0]
        if ikind not in ("String", "A_Star"):
            rest = body["indirection"][i:]
            break
        fields.append(item)
        if ikind == "A_Star":
            rest = body["indirection"][i + 1:]
            break
    _resolve(fields, scope, clause, ref.get("location"), out)
    if rest:
        push((rest, scope, clause))
    return True


def _levels(scope: Scope) -> list[Scope]:
    out = []
    node: Scope | None = scope
    while node is not None:
        out.append(node)
        node = node.parent
    return out


def _names(*candidates: str | None) -> frozenset[str]:
    return frozenset(c.casefold() for c in candidates if c)


def _function_name(body: JSON) -> str | None:
    for entry in body.get("functions", ()):
        for item in unwrap(entry)[1].get("items", ()):
            kind, call = unwrap(item)
            if kind == "FuncCall":
                parts = names(call.get("funcname"))
                return parts[-1] if parts else None
    return None


def _outputs(query: Any) -> tuple[str, ...] | None:
    """Output names of a query when the text alone fixes them (explicit alias or plain column), else None."""
    kind, body = unwrap(query)
    if kind != "SelectStmt":
        return None
    while body.get("op", "SETOP_NONE") != "SETOP_NONE" and isinstance(body.get("larg"), dict):
        body = body["larg"]
    if body.get("valuesLists"):
        first = unwrap(body["valuesLists"][0])[1].get("items", ())
        return tuple(f"column{i + 1}" for i in range(len(first)))
    out = []
    for target in body.get("targetList", ()):
        res = unwrap(target)[1]
        if res.get("name"):
            out.append(res["name"])
            continue
        vkind, val = unwrap(res.get("val"))
        parts = names(val.get("fields")) if vkind == "ColumnRef" else []
        if not parts or len(parts) != len(val.get("fields", ())):
            return None  # a star, or a name Postgres derives from a function or type: not known here
        out.append(parts[-1])
    return tuple(out)


def _cte_columns(cte: JSON) -> tuple[str, ...] | None:
    """A CTE's output names; unknown when SEARCH or CYCLE add columns of their own (``SET email``)."""
    if cte.get("search_clause") or cte.get("cycle_clause"):
        return None
    return _renamed(_outputs(cte.get("ctequery")), cte.get("aliascolnames"))


def _renamed(columns: tuple[str, ...] | None, colnames: Any) -> tuple[str, ...] | None:
    new = names(colnames)
    if not new:
        return columns
    if columns is None:
        return None
    return tuple(new) + columns[len(new):]


def _known(rng: Range, ranges: list[Range]) -> tuple[str, ...] | None:
    """Every output name of one side of a join (``ranges``: all FROM items inside it), or None when any
    is unknown. The list must be complete: a NATURAL join on a name missing from it would go unseen."""
    if not rng.leaves:
        return rng.columns if rng.table is None else None
    out: list[str] = []
    for item in ranges:
        if item.renamed:
            return None
        if item.leaves:
            continue
        if item.table is not None or item.columns is None:
            return None
        out.extend(item.columns)
    return tuple(out)


def _common(left: tuple[str, ...] | None, right: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """Columns a NATURAL join may join on: known when either side's names are known."""
    if left is not None and right is not None:
        return tuple(c for c in left if c in right)
    return left if left is not None else right


def _parse(sql: str) -> JSON:
    from pglast import parser

    stmt: JSON = json.loads(parser.parse_sql_json(sql))["stmts"][0]["stmt"]
    return stmt
