"""``check(sql, policy)``: the static safety check, a chain of small rules over two parsers' readings."""

from __future__ import annotations

from gateway.safety import sqlglot_reading, statement
from gateway.safety.context import Context
from gateway.safety.model import Finding, Verdict
from gateway.safety.policy import Policy
from gateway.safety.rules import RULES
from gateway.safety.tree import index

_DEFAULT = Policy()


def check(sql: str, policy: Policy | None = None) -> Verdict:
    """Judge one SQL text without touching a database; never raises.

    >>> check("SELECT region, count(*) FROM orders GROUP BY region").allowed
    True
    >>> check("SELECT 1; DROP TABLE orders").codes
    ['multiple_statements']
    >>> [f.message for f in check("SELECT pg_sleep(10)").findings]
    ['pg_sleep() is blocked (sleep).']
    """
    policy = policy or _DEFAULT
    if not isinstance(sql, str):
        return Verdict(sql=str(sql), findings=(Finding("parse_error", "The SQL must be a string."),))
    try:
        return _check(sql, policy)
    except RecursionError:
        return Verdict(sql, (Finding("too_complex", "The query is nested too deeply to analyse."),))
    except Exception as exc:  # noqa: BLE001 - deny by default: a checker bug refuses, it never lets through
        message = f"The checker could not analyse the text ({type(exc).__name__})."
        return Verdict(sql, (Finding("parse_error", message),))


def _check(sql: str, policy: Policy) -> Verdict:
    if "\x00" in sql:
        # libpg_query and the wire protocol stop at NUL; what follows it must not hide from the check.
        nul = Finding("parse_error", "The text contains a NUL character.", None, sql.index("\x00"))
        return Verdict(sql, (nul,))
    stmt, findings = statement.read(sql)
    if stmt is None:
        return Verdict(sql, tuple(findings))
    expression, sqlglot_findings = sqlglot_reading.read(sqlglot_reading.query_text(sql, stmt))
    findings.extend(sqlglot_findings)
    tree = index(stmt.query)
    ctx = Context(sql, stmt, tree, expression)
    for rule in RULES:
        findings.extend(rule(ctx, policy))
    return Verdict(sql, _dedupe(findings), stmt.kind, _tables(tree))


def _dedupe(findings: list[Finding]) -> tuple[Finding, ...]:
    """Both parsers may report the same problem; keep the first (Postgres's, which has positions)."""
    seen: dict[tuple[str, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.code, (f.clause or f.message).lower()), f)
    return tuple(seen.values())


def _tables(tree) -> frozenset[str]:  # type: ignore[no-untyped-def]
    ctes = tree.cte_names()
    out = set()
    for rel, _ in tree.relations:
        name = rel.get("relname", "").lower()
        schema = rel.get("schemaname")
        if schema:
            out.add(f"{schema.lower()}.{name}")
        elif rel.get("relname") not in ctes:
            out.add(name)
    return frozenset(out)
