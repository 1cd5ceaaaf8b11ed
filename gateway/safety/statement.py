"""Statement count and kind, as Postgres's own grammar (libpg_query, through pglast) reads the text.

This is the gate that makes comment, dollar-quote and escape-string tricks harmless: whatever sqlglot
thinks, the text holds exactly one statement here or it is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pglast import parser as pg

from gateway.safety.model import Finding
from gateway.safety.tree import JSON, unwrap

_WRITES = frozenset(
    {
        "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt", "TruncateStmt", "CreateTableAsStmt",
        "IndexStmt", "ViewStmt", "RuleStmt", "DefineStmt", "CompositeTypeStmt", "RenameStmt", "CommentStmt",
        "SecLabelStmt", "GrantStmt", "GrantRoleStmt", "ReassignOwnedStmt", "DropOwnedStmt",
        "ImportForeignSchemaStmt", "CreateCastStmt", "CreateConversionStmt",
    }
)
_READABLE = {
    "TransactionStmt": "transaction control (BEGIN/COMMIT/ROLLBACK/SAVEPOINT)",
    "VariableSetStmt": "SET/RESET",
    "VariableShowStmt": "SHOW",
    "DiscardStmt": "DISCARD",
    "CopyStmt": "COPY",
    "DoStmt": "DO",
    "PrepareStmt": "PREPARE",
    "ExecuteStmt": "EXECUTE",
    "DeallocateStmt": "DEALLOCATE",
    "CallStmt": "CALL",
    "ListenStmt": "LISTEN",
    "NotifyStmt": "NOTIFY",
    "UnlistenStmt": "UNLISTEN",
    "VacuumStmt": "VACUUM/ANALYZE",
    "ClusterStmt": "CLUSTER",
    "ReindexStmt": "REINDEX",
    "CheckPointStmt": "CHECKPOINT",
    "LoadStmt": "LOAD",
    "RefreshMatViewStmt": "REFRESH MATERIALIZED VIEW",
    "LockStmt": "LOCK",
    "DeclareCursorStmt": "DECLARE CURSOR",
    "FetchStmt": "FETCH/MOVE",
    "ClosePortalStmt": "CLOSE",
    "ConstraintsSetStmt": "SET CONSTRAINTS",
    "AlterSystemStmt": "ALTER SYSTEM",
    "ExplainStmt": "EXPLAIN",
}
# EXPLAIN options whose value means "off"; anything else given to ANALYZE turns it on.
_OFF = frozenset({"false", "off", "0", "no"})


@dataclass(slots=True)
class Statement:
    """The one statement of an allowed-looking text: its kind and the query node to judge."""

    kind: str  # 'select' | 'explain'
    query: JSON  # {"SelectStmt": {...}}
    query_start: int  # byte offset of the query inside the text (after EXPLAIN and its options)
    end: int | None = None  # byte offset where Postgres's statement ends (before its ';'); None: end of text


def char_offset(sql: str, byte_offset: int | None) -> int | None:
    """libpg_query reports byte offsets into UTF-8; findings carry character offsets."""
    if byte_offset is None or byte_offset < 0:
        return None
    if sql.isascii():
        return byte_offset
    return len(sql.encode("utf-8", "surrogatepass")[:byte_offset].decode("utf-8", "ignore"))


def read(sql: str) -> tuple[Statement | None, list[Finding]]:
    """Parse with Postgres's grammar; return the statement to judge, or findings that refuse the text."""
    try:
        raw = pg.parse_sql_json(sql)
    except pg.ParseError as exc:
        where = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else None
        message = exc.args[0] if exc.args else "syntax error"
        return None, [Finding("parse_error", f"PostgreSQL cannot parse the text: {message}", None,
                              char_offset(sql, where))]
    stmts = json.loads(raw).get("stmts", [])
    if len(stmts) != 1:
        what = "no statement" if not stmts else f"{len(stmts)} statements"
        pos = char_offset(sql, stmts[1].get("stmt_location")) if len(stmts) > 1 else None
        return None, [Finding("multiple_statements", f"Exactly one statement is allowed, found {what}.",
                              None, pos)]
    stmt = stmts[0]["stmt"]
    kind, body = unwrap(stmt)
    location = stmts[0].get("stmt_location", 0)
    # What follows the statement's end is, to Postgres, only its ';', comments and white space.
    end = location + stmts[0]["stmt_len"] if stmts[0].get("stmt_len") else None
    if kind == "SelectStmt":
        return Statement("select", stmt, location, end), []
    if kind == "ExplainStmt":
        inner_kind, _ = unwrap(body.get("query"))
        if inner_kind != "SelectStmt":
            return None, [_refuse(inner_kind, "EXPLAIN of ")]
        findings = []
        for option in body.get("options", ()):
            _, opt = unwrap(option)
            if opt.get("defname") == "analyze" and _option_value(opt) not in _OFF:
                findings.append(Finding("explain_analyze", "EXPLAIN ANALYZE executes the statement.",
                                        "ANALYZE", char_offset(sql, opt.get("location"))))
        return Statement("explain", body["query"], _query_start(sql), end), findings
    return None, [_refuse(kind, "")]


def _refuse(kind: str, prefix: str) -> Finding:
    if kind not in _READABLE and (kind in _WRITES or kind.startswith(("Create", "Alter", "Drop"))):
        name = kind.removesuffix("Stmt")
        return Finding("write_statement", f"{prefix}{name} writes data or schema; only queries are allowed.",
                       name)
    name = _READABLE.get(kind, kind.removesuffix("Stmt") or "unknown")
    return Finding("statement_not_allowed", f"{prefix}{name} is not a query; only SELECT and EXPLAIN are "
                   "allowed.", name)


def _option_value(opt: JSON) -> str:
    if "arg" not in opt:
        return "true"
    kind, arg = unwrap(opt["arg"])
    if kind == "String":
        return str(arg.get("sval", "")).lower()
    if kind == "Integer":
        return str(arg.get("ival", 0))
    if kind == "Boolean":
        return "true" if arg.get("boolval") else "false"
    return "true"


def _query_start(sql: str) -> int:
    """Byte offset where an EXPLAIN's query begins: after EXPLAIN, its (options) or legacy keywords."""
    tokens = pg.scan(sql)
    i = 1  # tokens[0] is EXPLAIN
    if i < len(tokens) and tokens[i].name == "ASCII_40":  # '('
        depth = 0
        while i < len(tokens):
            depth += {"ASCII_40": 1, "ASCII_41": -1}.get(tokens[i].name, 0)
            i += 1
            if depth == 0:
                break
    while i < len(tokens) and tokens[i].name in ("ANALYZE", "ANALYSE", "VERBOSE"):
        i += 1
    return tokens[i].start if i < len(tokens) else len(sql.encode("utf-8"))
