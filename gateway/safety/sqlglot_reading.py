"""sqlglot's reading of the query, the second parser: what it cannot fully read is refused.

sqlglot is not Postgres (it parses ``EXPLAIN`` as an opaque command, renders nested comments differently,
reads ``U&"..."`` as an operator), so it never decides that something is safe on its own: Postgres's tree
is judged by the rules, and this reading only adds refusals (see ``rules/sqlglot_agrees.py``).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from gateway.safety.model import Finding


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
