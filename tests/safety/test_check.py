"""check() beyond the case files: verdict fields, positions, odd inputs, the public surface, doctests."""

from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import gateway.safety
from gateway.safety import CODES, Finding, Policy, Verdict, check
from gateway.safety.rules import RULES


def test_exported_members() -> None:
    assert gateway.safety.__all__ == sorted(gateway.safety.__all__)
    assert set(gateway.safety.__all__) == {"CODES", "Finding", "Policy", "Verdict", "check"}


def test_doctests() -> None:
    failures = 0
    for info in pkgutil.walk_packages(gateway.safety.__path__, "gateway.safety."):
        result = doctest.testmod(importlib.import_module(info.name))
        failures += result.failed
    failures += doctest.testmod(gateway.safety).failed
    assert failures == 0


def test_verdict_fields_for_an_allowed_query() -> None:
    verdict = check("WITH x AS (SELECT id FROM Sales.Orders) SELECT * FROM x JOIN Customers c ON c.id = x.id")
    assert verdict.allowed and verdict.findings == ()
    assert verdict.statement_kind == "select"
    # CTE names are not tables; unquoted names fold to lower case as Postgres does.
    assert verdict.tables == frozenset({"sales.orders", "customers"})
    assert verdict.as_dict()["allowed"] is True


def test_explain_kind_and_tables() -> None:
    verdict = check("EXPLAIN (FORMAT JSON) SELECT * FROM orders")
    assert verdict.allowed and verdict.statement_kind == "explain" and verdict.tables == {"orders"}


def test_blocked_statement_has_no_kind() -> None:
    verdict = check("DELETE FROM orders")
    assert verdict.statement_kind is None and verdict.codes == ["write_statement"]
    assert "Delete" in verdict.findings[0].message


def test_positions_point_at_the_offender_even_after_non_ascii_text() -> None:
    sql = "SELECT 'Zürich — ü', pg_sleep(1)"
    (finding,) = check(sql).findings
    assert finding.position is not None and sql[finding.position:].startswith("pg_sleep")
    sql = "SELECT 'é'; DROP TABLE x"
    (finding,) = check(sql).findings
    assert sql[finding.position:].lstrip().startswith("DROP")


def test_message_names_the_function_and_the_reason() -> None:
    (finding,) = check("SELECT lo_import('/etc/passwd')").findings
    assert finding.code == "function_blocked" and "lo_import" in finding.message and "large_object" in finding.message
    assert finding.clause == "lo_import"


def test_nul_byte_cannot_hide_a_statement() -> None:
    assert check("SELECT 1\x00; DROP TABLE x").codes == ["parse_error"]


@pytest.mark.parametrize("value", [None, 1, b"SELECT 1", ["SELECT 1"]])
def test_non_string_input_is_refused_not_raised(value: object) -> None:
    verdict = check(value)  # type: ignore[arg-type]
    assert isinstance(verdict, Verdict) and verdict.codes == ["parse_error"]


def test_lone_surrogate_is_refused_not_raised() -> None:
    assert not check("SELECT '\ud800'").allowed


def test_deep_nesting_is_refused_not_raised() -> None:
    sql = "SELECT " + "(" * 5000 + "1" + ")" * 5000
    assert not check(sql).allowed
    sql = "SELECT * FROM " + "(SELECT * FROM " * 300 + "t" + ") s" * 300
    assert not check(sql).allowed


def test_limits_come_from_the_policy() -> None:
    sql = "SELECT * FROM (SELECT * FROM (SELECT 1 AS x) a) b"
    assert check(sql).allowed
    assert check(sql, Policy(max_subquery_depth=1)).codes == ["subquery_too_deep"]
    joins = "SELECT 1 FROM a JOIN b ON a.id = b.id JOIN c ON c.id = b.id"
    assert check(joins, Policy(max_joins=2)).allowed
    assert check(joins, Policy(max_joins=1)).codes == ["too_many_joins"]


def test_blocked_function_cannot_be_allowed_by_extra_functions() -> None:
    assert check("SELECT pg_sleep(1)", Policy(extra_functions=frozenset({"pg_sleep"}))).codes == ["function_blocked"]


def test_rules_only_emit_documented_codes() -> None:
    # Every code a rule module mentions as a literal must be documented in CODES.
    root = Path(gateway.safety.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant):
                    assert first.value in CODES, (path.name, first.value)
                elif isinstance(first, ast.Name):
                    continue  # e.g. code = "data_modifying_cte" if ... else ...
    assert len(RULES) >= 8


def test_findings_are_typed() -> None:
    finding = check("SELECT nextval('s')").findings[0]
    assert isinstance(finding, Finding) and finding.as_dict()["code"] == "function_blocked"


_IO_MODULES = {"asyncpg", "socket", "ssl", "http", "urllib", "requests", "httpx", "subprocess", "psycopg",
               "psycopg2", "openai", "sqlite3", "shutil", "asyncio"}


def test_safety_package_imports_no_io_modules() -> None:
    root = Path(gateway.safety.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods = [node.module]
            else:
                continue
            for mod in mods:
                assert mod.split(".")[0] not in _IO_MODULES, (path.name, mod)
