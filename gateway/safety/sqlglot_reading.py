"""sqlglot's reading of the query, the second parser: what it cannot fully read is refused.

sqlglot is not Postgres (it parses ``EXPLAIN`` as an opaque command, renders nested comments differently,
reads ``U&"..."`` as an operator), so it never decides that something is safe on its own: Postgres's tree
is judged by the rules, and this reading only adds refusals (see ``rules/sqlglot_agrees.py``).

sqlglot reads the statement as Postgres delimits it (:func:`query_text`): what Postgres's scanner puts after
the statement's end is only its ``;``, comments and white space, which sqlglot would count as a second
statement. Spellings sqlglot does not know are rewritten, token by token from Postgres's own scanner, to
ones that mean the same (``1_000`` and ``0x1F`` to ``1000`` and ``31``; XML's no-op ``BY REF`` dropped; an XMLTABLE
column ``n FOR ORDINALITY`` read as ``n INT``),
so the second opinion still reads every statement instead of being switched off by what it cannot read.
The executed text is never this one: it is the checked text, exactly.
"""

from __future__ import annotations

import sqlglot
from pglast import parser as pg
from sqlglot import exp

from gateway.safety.model import Finding
from gateway.safety.statement import Statement, char_offset

_PREFIXES = ("0x", "0o", "0b")


def query_text(sql: str, stmt: Statement) -> str:
    """The query part of ``sql`` (after EXPLAIN and its options, up to Postgres's end of the statement),
    with numeric literals in PostgreSQL 16 spellings and XML's ``BY REF`` rewritten for sqlglot."""
    start = char_offset(sql, stmt.query_start) or 0
    end = char_offset(sql, stmt.end) if stmt.end is not None else None
    piece = sql[start:end]
    tokens = pg.scan(piece)  # character offsets, ends inclusive
    out, done = [], 0
    for i, tok in enumerate(tokens):
        text = piece[tok.start:tok.end + 1]
        new = None
        if tok.name in ("ICONST", "FCONST"):
            new = _number(text)
        elif tok.name == "BY" and _passing_mechanism(tokens, i):
            new = ""  # BY REF / BY VALUE after PASSING mean nothing to Postgres; sqlglot knows only BY VALUE
        elif tok.name == "REF_P" and i and tokens[i - 1].name == "BY" and _passing_mechanism(tokens, i - 1):
            new = ""
        elif tok.name == "FOR" and _ordinality_column(tokens, i):
            new = "INT"  # sqlglot drops the column's kind, or fails when other columns follow: same data, an int
        elif tok.name == "ORDINALITY" and i and tokens[i - 1].name == "FOR" and _ordinality_column(tokens, i - 1):
            new = ""
        if new is not None and new != text:
            out.append(piece[done:tok.start])
            out.append(f" {new} ")
            done = tok.end + 1
    out.append(piece[done:])
    return "".join(out)


def _number(text: str) -> str:
    """A numeric literal as sqlglot reads it: no digit-group underscores, no base prefix."""
    lowered = text.lower()
    if lowered.startswith(_PREFIXES):
        return str(int(lowered, 0))
    return text.replace("_", "")


def _passing_mechanism(tokens: list, i: int) -> bool:  # type: ignore[type-arg]
    """Whether ``tokens[i]`` (BY) starts XMLTABLE's or XMLEXISTS's ``BY REF|VALUE``: right after PASSING,
    or followed by COLUMNS (a column named ``ref`` after ORDER/GROUP BY is never followed by COLUMNS)."""
    if i + 1 >= len(tokens) or tokens[i + 1].name not in ("REF_P", "VALUE_P"):
        return False
    after = tokens[i + 2].name if i + 2 < len(tokens) else ""
    return (i > 0 and tokens[i - 1].name == "PASSING") or after == "COLUMNS"


def read(text: str) -> tuple[exp.Expr | None, list[Finding]]:
    """Parse ``text`` (the query part of the checked SQL: after EXPLAIN and its options)."""
    try:
        parsed = [e for e in sqlglot.parse(text, read="postgres") if e is not None]
    except sqlglot.errors.ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        line_col = f" (line {detail.get('line')}, column {detail.get('col')})" if detail else ""
        desc = str(detail.get("description", "")) if detail else str(exc)
        return None, [Finding("parse_error", f"sqlglot cannot parse the query{line_col}: {desc}")]
    except RecursionError:
        return None, [Finding("too_complex", "The query is nested too deeply to analyse.")]
    except Exception as exc:  # noqa: BLE001 - sqlglot's tokenizer raises several types; any is a refusal
        return None, [Finding("parse_error", f"sqlglot cannot read the query: {type(exc).__name__}: {exc}")]
    if len(parsed) != 1:
        return None, [Finding("multiple_statements",
                              f"sqlglot reads {len(parsed)} statements where PostgreSQL reads one.")]
    return parsed[0], []


def _ordinality_column(tokens: list, i: int) -> bool:  # type: ignore[type-arg]
    """Whether ``tokens[i]`` (FOR) is a table function's ``name FOR ORDINALITY`` column: the name follows
    COLUMNS or a comma, and a comma or ``)`` follows (``substring(s FROM 1 FOR ordinality)`` is not)."""
    if i < 2 or i + 2 >= len(tokens) or tokens[i + 1].name != "ORDINALITY":
        return False
    return tokens[i - 2].name in ("COLUMNS", "ASCII_44") and tokens[i + 2].name in ("ASCII_44", "ASCII_41")
