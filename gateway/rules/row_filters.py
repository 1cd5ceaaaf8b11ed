"""Row filters: "the gateway decides" which rows of a table a caller may read, from the caller's claims.

A rule ``row_filter: "tenant_id = {claim.tenant_id}"`` on a table makes the gateway replace **every**
reference to that table, in every scope (subqueries, CTE bodies, set operations, LATERAL, EXISTS, scalar
subqueries, both sides of outer joins, ``TABLE t``, ``ONLY t``), by a derived table that holds only the
caller's rows::

    FROM orders o LEFT JOIN customers USING (customer_id)
    FROM (SELECT * FROM orders AS nl2sql_rf WHERE nl2sql_rf.tenant_id = $1 OFFSET 0) o
         LEFT JOIN (SELECT * FROM customers AS nl2sql_rf WHERE nl2sql_rf.tenant_id = $2 OFFSET 0) AS "customers" ...

The reference itself is filtered, never the outer WHERE, so outer joins, ``t.*``, whole-row ``t``,
``to_jsonb(t)`` and column-alias lists (``orders AS o(a, b)``) keep their meaning. ``OFFSET 0`` keeps the
planner from merging the derived table into the outer query, where the client's cheaper conditions would run
first, on every tenant's rows (a failing cast names the value it failed on). Claim values are bound as
parameters (``$n``), never spliced as text. Names are resolved as Postgres does, on Postgres's own parse tree
(pglast): a CTE of the same name shadows the table (not filtered, its body is); a CTE of a non-recursive
WITH is not visible in its own body nor in earlier siblings. The edit is made on the original text, token
by token, so everything else of the statement is exactly what the client wrote.

Anything that reads rows the rewrite cannot filter is refused (:class:`Unenforceable`): views, materialized
views, catalogs and relations the gateway does not know as base tables, TABLESAMPLE or EXPLAIN over a
filtered table, bind parameters, and the DBA's own functions (which may read any table).

>>> f = parse_row_filter("orders", "tenant_id = {claim.tenant_id}")
>>> f.claims, sorted(f.columns)
(('tenant_id',), ['tenant_id'])
>>> r = rewrite("SELECT count(*) FROM orders", {"orders": f}, {"tenant_id": "7"}, None)
>>> r.sql
'SELECT count(*) FROM (SELECT * FROM orders AS nl2sql_rf WHERE (nl2sql_rf.tenant_id = $1) OFFSET 0) AS "orders"'
>>> r.args
('7',)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pglast import parser as pg

from gateway.safety.tree import descend

ALIAS = "nl2sql_rf"
PLACEHOLDER = re.compile(r"\{claim\.([^{}]*)\}")
NAME = re.compile(r"[a-z_][a-z0-9_]*")

# What a filter expression may be made of: columns of its table, claims, constants, operators, casts,
# functions; never a subquery (which could read another table) nor anything that is not an expression.
_FILTER_NODES = frozenset({
    "ColumnRef", "ParamRef", "A_Const", "A_Expr", "BoolExpr", "NullTest", "BooleanTest", "TypeCast", "FuncCall",
    "CoalesceExpr", "CaseExpr", "CaseWhen", "A_ArrayExpr", "List", "String", "Integer", "Float", "Boolean",
    "MinMaxExpr", "SQLValueFunction", "NullIfExpr",
})
_CATALOG_SCHEMAS = ("pg_catalog", "information_schema")
_COMMENTS = ("SQL_COMMENT", "C_COMMENT")


class Unenforceable(ValueError):
    """The statement reads rows the row filters cannot reach; ``position`` is a byte offset (or None)."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class ClaimMissing(LookupError):
    """A filtered table is read and the caller has no value for a claim its filter needs."""

    def __init__(self, claim: str, table: str) -> None:
        super().__init__(f"reading {table} needs the row-policy value {claim!r}, which the caller does not have")
        self.claim = claim
        self.table = table


@dataclass(frozen=True, slots=True)
class RowFilter:
    """One table's filter: the text as written, and the pieces it is spliced from (text, or a claim name)."""

    table: str  # the rule's key, lower case: 'orders' or 'sales.orders'
    sql: str
    pieces: tuple[tuple[str, str], ...]  # ('text', sql) | ('claim', name); columns qualified with ALIAS
    claims: tuple[str, ...]
    columns: frozenset[str]
    file: str = ""
    line: int = 0

    def render(self, values: Mapping[str, str], args: list[str]) -> str:
        """The filter with each claim as the next ``$n`` (its value appended to ``args``)."""
        out = []
        for kind, piece in self.pieces:
            if kind == "text":
                out.append(piece)
            else:
                args.append(values[piece])
                out.append(f"${len(args)}")
        return "".join(out)


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation as the gateway's introspection sees it (gateway.execute.introspect)."""

    schema: str
    name: str
    kind: str  # 'table' | 'view' | 'materialized_view' | 'foreign_table'
    columns: tuple[tuple[str, str], ...] = ()  # (name, type), in attribute order
    ancestors: tuple[tuple[str, str], ...] = ()  # (schema, name) of every table it inherits from


@dataclass(frozen=True, slots=True)
class Rewritten:
    sql: str
    args: tuple[str, ...]
    filtered: tuple[str, ...]  # the rule keys applied, once per reference


def parse_row_filter(table: str, sql: str, file: str = "", line: int = 0) -> RowFilter:
    """Validate a filter; ValueError says what is wrong with it.

    It must be one boolean-looking expression over the table's own columns (unqualified names), constants,
    operators and functions, with ``{claim.NAME}`` placeholders (NAME: ``[a-z_][a-z0-9_]*``); no subquery,
    no comment, nothing after the expression."""
    names: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        name = match.group(1)
        if not NAME.fullmatch(name):
            raise ValueError(f"{{claim.{name}}}: a claim name is lower-case letters, digits and _")
        names.append(name)
        return f"${len(names)}"

    substituted = PLACEHOLDER.sub(placeholder, sql)
    if "{claim" in substituted:
        raise ValueError("a placeholder is written {claim.NAME}")
    prefix = f"SELECT 1 FROM t AS {ALIAS} WHERE "
    text = prefix + substituted
    data = text.encode("utf-8")
    try:
        stmts = json.loads(pg.parse_sql_json(text)).get("stmts", [])
        tokens = _scan(text)
    except pg.ParseError as exc:
        raise ValueError(f"the filter does not parse as a SQL expression: {exc.args[0] if exc.args else exc}") from None
    select = stmts[0]["stmt"].get("SelectStmt") if len(stmts) == 1 else None
    if select is None or set(select) - {"targetList", "fromClause", "whereClause", "limitOption", "op"}:
        raise ValueError("the filter must be one boolean expression (no ORDER BY, GROUP BY, LIMIT, ...)")
    _no_comments(data, tokens, len(prefix.encode()))
    where = select["whereClause"]
    kind = next(iter(where)) if isinstance(where, dict) and len(where) == 1 else ""
    if kind == "A_Const":
        raise ValueError("the filter must be a condition, e.g. tenant_id = {claim.tenant_id}")
    columns: set[str] = set()
    inserts: list[tuple[int, str, str]] = []  # (byte offset, 'col' | 'param', payload)
    params = 0
    for node_kind, body in descend(where):
        if node_kind not in _FILTER_NODES:
            raise ValueError(f"a row filter may not contain {node_kind} (only expressions over the table's columns)")
        if node_kind == "FuncCall" and (body.get("over") or body.get("agg_star") or body.get("agg_filter")):
            raise ValueError("a row filter may not use aggregates or window functions")
        if node_kind == "ColumnRef":
            fields = body.get("fields", [])
            if len(fields) != 1 or "String" not in fields[0]:
                raise ValueError("a row filter names its table's columns unqualified (tenant_id, not t.tenant_id)")
            columns.add(fields[0]["String"]["sval"])
            inserts.append((body["location"], "col", ""))
        elif node_kind == "ParamRef":
            params += 1
            inserts.append((body["location"], "param", names[body["number"] - 1]))
    if params != len(names):
        raise ValueError("a {claim.NAME} placeholder must stand where a value does, not inside a string")
    if not columns:
        raise ValueError("the filter must read the table's columns, e.g. tenant_id = {claim.tenant_id}")
    pieces: list[tuple[str, str]] = []
    at = len(prefix.encode())
    for offset, what, payload in sorted(inserts):
        pieces.append(("text", data[at:offset].decode()))
        if what == "col":
            pieces.append(("text", f"{ALIAS}."))
            at = offset
        else:
            pieces.append(("claim", payload))
            at = _param_end(data, offset)
    pieces.append(("text", data[at:].decode()))
    merged: list[tuple[str, str]] = []
    for kind_, piece in pieces:
        if merged and kind_ == "text" and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + piece)
        elif piece or kind_ == "claim":
            merged.append((kind_, piece))
    return RowFilter(table.lower(), sql, tuple(merged), tuple(dict.fromkeys(names)), frozenset(columns), file, line)


@dataclass(frozen=True, slots=True)
class _Token:
    name: str
    start: int  # byte offset of the first byte
    end: int  # byte offset of the last byte


def _scan(sql: str) -> list[_Token]:
    """pglast's tokens with byte offsets. ``scan()`` counts characters while the parse tree's locations count
    bytes: mixed, a multibyte character before a filtered table made a location name another token, and the
    edit then spliced the filter around text of the attacker's choosing (``FROM orders o,x t`` with the
    filter on the CTE ``x``)."""
    ends = [0]
    for ch in sql:
        ends.append(ends[-1] + len(ch.encode("utf-8")))
    return [_Token(t.name, ends[t.start], ends[t.end + 1] - 1) for t in pg.scan(sql)]


def _param_end(data: bytes, offset: int) -> int:
    end = offset + 1
    while end < len(data) and data[end:end + 1].isdigit():
        end += 1
    return end


def _no_comments(data: bytes, tokens: Any, start: int) -> None:
    """Only whitespace between tokens: a comment in a filter would swallow what the rewrite puts after it."""
    at = start
    for token in tokens:
        if token.end < start:
            continue
        if token.name in _COMMENTS:
            raise ValueError("a row filter may not contain comments")
        if data[at:max(at, token.start)].strip():
            raise ValueError("a row filter may not contain comments")
        at = token.end + 1
    if data[at:].strip():
        raise ValueError("a row filter may not contain comments")


# --- the rewrite ---------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Ref:
    body: dict[str, Any]
    sampled: bool = False


def rewrite(sql: str, filters: Mapping[str, RowFilter], claims: Mapping[str, str],
            relations: Sequence[Relation] | None, *, hidden: Callable[[str, str], bool] | None = None,
            functions: frozenset[str] = frozenset(), bound: Sequence[str] = ()) -> Rewritten:
    """``sql`` with every reference to a filtered table replaced by its filtered derived table.

    ``bound``: values of the statement's own ``$1 .. $n`` (a template's parameters, gateway.templates); the
    claims then follow as ``$n+1 ...`` and the returned args start with ``bound``. Without it a bind
    parameter is refused (its value would be unknown to the rewrite).

    ``relations``: what the gateway knows of the database (None: nothing, so every relation that is neither a
    filtered table nor a CTE is refused). ``hidden(table, column)``: columns the rules hide, which the derived
    table lists as NULL so that it never reads them. ``functions``: the DBA's own functions, refused.
    Raises :class:`Unenforceable` or :class:`ClaimMissing`; a text that does not parse is returned unchanged
    (the safety check refuses it)."""
    try:
        stmts = json.loads(pg.parse_sql_json(sql)).get("stmts", [])
        tokens = [t for t in _scan(sql) if t.name not in _COMMENTS]  # `public /* */ . orders` is one name
    except pg.ParseError:
        return Rewritten(sql, (), ())
    if len(stmts) != 1:
        return Rewritten(sql, (), ())
    stmt = stmts[0]["stmt"]
    refs: list[_Ref] = []
    _walk(stmt, frozenset(), refs, functions, len(bound))
    data = sql.encode("utf-8")
    by_start = {t.start: i for i, t in enumerate(tokens)}
    edits: list[tuple[int, int, str]] = []
    args: list[str] = list(bound)
    applied: list[str] = []
    known = _Known(relations)
    for ref in sorted(refs, key=lambda r: r.body.get("location", -1)):
        body = ref.body
        where = body.get("location")
        found = _filter_for(body, filters)
        if found is None:
            known.require_base_table(body)
            known.require_unfiltered_ancestors(body, filters)
            continue
        if ref.sampled:
            raise Unenforceable("TABLESAMPLE over a filtered table cannot be filtered", where)
        if "ExplainStmt" in stmt:
            raise Unenforceable("EXPLAIN of a statement reading a filtered table shows estimates drawn from every "
                                "tenant's rows", where)
        for claim in found.claims:
            if claim not in claims:
                raise ClaimMissing(claim, found.table)
        edits.append(_edit(data, tokens, by_start, body, found, claims, args, known.columns(body), hidden))
        applied.append(found.table)
    if not edits:
        return Rewritten(sql, tuple(bound), ())
    out = data
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text.encode("utf-8") + out[end:]
    return Rewritten(out.decode("utf-8"), tuple(args), tuple(applied))


def _walk(node: Any, visible: frozenset[str], refs: list[_Ref], functions: frozenset[str], bound: int = 0) -> None:
    """Collect the RangeVars that name relations (not CTEs), with Postgres's CTE visibility."""
    stack: list[tuple[Any, frozenset[str]]] = [(node, visible)]
    while stack:
        value, seen = stack.pop()
        if isinstance(value, list):
            stack.extend((v, seen) for v in value if isinstance(v, (dict, list)))
            continue
        if not isinstance(value, dict):
            continue
        kind, body = "", value
        if len(value) == 1:
            ((only_key, only),) = value.items()
            if only_key[:1].isupper() and isinstance(only, dict):
                kind, body = only_key, only
        if kind == "SelectStmt":
            _select(body, seen, stack)
            continue
        if kind == "RangeVar":
            if body.get("schemaname") is not None or body.get("catalogname") is not None \
                    or body.get("relname") not in seen:
                refs.append(_Ref(body))
            continue
        if kind == "RangeTableSample":
            relation = body.get("relation", {})
            if "RangeVar" in relation:
                rv = relation["RangeVar"]
                if rv.get("schemaname") is not None or rv.get("relname") not in seen:
                    refs.append(_Ref(rv, sampled=True))
                stack.extend((v, seen) for k, v in body.items() if k != "relation" and isinstance(v, (dict, list)))
                continue
        if kind == "ParamRef" and not 1 <= int(body.get("number", 0)) <= bound:
            raise Unenforceable("bind parameters ($n) are not accepted on a database with row filters",
                                body.get("location"))
        if kind == "FuncCall" and functions:
            name = ".".join(s["String"]["sval"] for s in body.get("funcname", []) if "String" in s).lower()
            if name in functions or name.rsplit(".", 1)[-1] in functions:
                raise Unenforceable(f"{name}() is one of the DBA's functions, which may read any table's rows",
                                    body.get("location"))
        stack.extend((v, seen) for v in body.values() if isinstance(v, (dict, list)))


def _select(body: dict[str, Any], visible: frozenset[str], stack: list[tuple[Any, frozenset[str]]]) -> None:
    inner = visible
    with_clause = body.get("withClause")
    if with_clause:
        ctes = [c.get("CommonTableExpr", {}) for c in with_clause.get("ctes", [])]
        names = [c.get("ctename") for c in ctes]
        everyone = visible | frozenset(n for n in names if n)
        for i, cte in enumerate(ctes):
            # WITH RECURSIVE: every CTE of the list is visible in every body; otherwise only earlier ones.
            scope = everyone if with_clause.get("recursive") else visible | frozenset(n for n in names[:i] if n)
            stack.append((cte.get("ctequery"), scope))
        inner = everyone
    for key, value in body.items():
        if key == "withClause":
            continue
        if key in ("larg", "rarg") and isinstance(value, dict):
            _select(value, inner, stack)  # a set operation's arms are bare SelectStmt bodies
        elif isinstance(value, (dict, list)):
            stack.append((value, inner))


def _filter_for(body: dict[str, Any], filters: Mapping[str, RowFilter]) -> RowFilter | None:
    """The filter of the table a RangeVar may name. Matching is by lower-cased name and errs towards filtering:
    a rule on ``orders`` filters every schema's ``orders``; ``sales.orders`` also filters an unqualified
    ``orders`` (the search_path may lead there)."""
    name = str(body.get("relname", "")).lower()
    schema = body.get("schemaname")
    for key, found in filters.items():
        rule_schema, _, rule_name = key.rpartition(".")
        if rule_name == name and (not rule_schema or schema is None or schema.lower() == rule_schema):
            return found
    return None


class _Known:
    """The relations a statement may read beside filtered tables: base tables the introspection lists."""

    def __init__(self, relations: Sequence[Relation] | None) -> None:
        self.by_bare: dict[str, list[Relation]] = {}
        for r in relations or ():
            self.by_bare.setdefault(r.name, []).append(r)

    def _matches(self, body: dict[str, Any]) -> list[Relation]:
        found = self.by_bare.get(str(body.get("relname")), [])
        schema = body.get("schemaname")
        return [r for r in found if schema is None or r.schema == schema]

    def require_base_table(self, body: dict[str, Any]) -> None:
        name = str(body.get("relname", ""))
        schema = body.get("schemaname")
        where = body.get("location")
        shown = f"{schema}.{name}" if schema else name
        if body.get("catalogname") is not None:
            raise Unenforceable(f"{shown}: a database-qualified name cannot be resolved here", where)
        if (schema or "").lower() in _CATALOG_SCHEMAS or (schema or "").lower().startswith("pg_") \
                or (schema is None and name.lower().startswith("pg_")):
            raise Unenforceable(f"{shown} is a system catalog; on a database with row filters only its tables "
                                "may be read", where)
        matches = self._matches(body)
        if not matches:
            raise Unenforceable(f"{shown} is not a table the gateway knows; on a database with row filters "
                                "only base tables may be read", where)
        if any(r.kind != "table" for r in matches):
            kind = next(r.kind for r in matches if r.kind != "table").replace("_", " ")
            raise Unenforceable(f"{shown} is a {kind}; its rows may come from a filtered table, which the "
                                "gateway cannot filter inside it", where)

    def require_unfiltered_ancestors(self, body: dict[str, Any], filters: Mapping[str, RowFilter]) -> None:
        """A table that inherits from a filtered table holds rows of that table's kind (``SELECT FROM parent``
        reads them through the parent's filter); read directly, without a filter of its own, it is refused."""
        for relation in self._matches(body):
            for schema, name in relation.ancestors:
                if _filter_for({"relname": name, "schemaname": schema}, filters) is not None:
                    raise Unenforceable(
                        f"{relation.schema}.{relation.name} inherits from {schema}.{name}, which has a row filter; "
                        "give it a row_filter of its own to read it directly", body.get("location"))

    def columns(self, body: dict[str, Any]) -> tuple[Relation, ...]:
        return tuple(self._matches(body))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _edit(data: bytes, tokens: list[Any], by_start: dict[int, int], body: dict[str, Any], found: RowFilter,
          claims: Mapping[str, str], args: list[str], matches: tuple[Relation, ...],
          hidden: Callable[[str, str], bool] | None) -> tuple[int, int, str]:
    """(start, end, replacement) in bytes for one filtered reference."""
    location = body.get("location", -1)
    i = by_start.get(location)
    if i is None:
        raise Unenforceable("the reference's position in the text is unknown", location)
    j = i
    while j + 2 < len(tokens) and tokens[j + 1].name == "ASCII_46":
        j += 2
    name_text = data[tokens[i].start:tokens[j].end + 1].decode("utf-8")
    start, end = tokens[i].start, tokens[j].end + 1
    before = i - 1
    only = body.get("inh") is not True
    if only:
        if before >= 0 and tokens[before].name == "ONLY":
            start, before = tokens[before].start, before - 1
        elif (before >= 1 and tokens[before].name == "ASCII_40" and tokens[before - 1].name == "ONLY"
              and j + 1 < len(tokens) and tokens[j + 1].name == "ASCII_41"):
            start, end, before = tokens[before - 1].start, tokens[j + 1].end + 1, before - 2
        else:
            raise Unenforceable("an inheritance spelling the gateway does not rewrite", location)
    elif j + 1 < len(tokens) and tokens[j + 1].name == "ASCII_42":
        end = tokens[j + 1].end + 1  # `t *`: the explicit spelling of the default (children included)
    statement_form = before >= 0 and tokens[before].name == "TABLE"
    select_list = "*"
    if hidden is not None and len(matches) == 1 and matches[0].columns:
        table = matches[0]
        if any(hidden(f"{table.schema}.{table.name}", c) for c, _ in table.columns):
            # The hidden columns keep their place (column-alias lists and whole-row values line up) as NULLs.
            select_list = ", ".join(
                f"NULL::{t} AS {_quote(c)}" if hidden(f"{table.schema}.{table.name}", c) else f"{ALIAS}.{_quote(c)}"
                for c, t in table.columns)
    # OFFSET 0 keeps the derived table a subquery of its own: pulled up into the outer query, its filter would
    # be one more condition, and Postgres evaluates the cheaper conditions first, so the client's
    # `to_date(name, 'Month') IS NULL` would run on every tenant's rows and name their values in its error.
    derived = (f"(SELECT {select_list} FROM {'ONLY ' if only else ''}{name_text} AS {ALIAS} "
               f"WHERE ({found.render(claims, args)}) OFFSET 0)")
    if statement_form:
        return tokens[before].start, end, f"SELECT * FROM {derived} AS {_quote(str(body.get('relname')))}"
    if body.get("alias") is None:
        derived += f" AS {_quote(str(body.get('relname')))}"
    return start, end, derived
