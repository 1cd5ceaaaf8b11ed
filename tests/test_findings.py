"""One finding type, one registry of codes: wire forms stay as clients read them, the registry's flags are
what the reflection trigger uses."""

from __future__ import annotations

import doctest

import pytest

from gateway import findings, safety
from gateway.findings import ALWAYS_REFLECT, CODES, REFLECTABLE, Finding
from gateway.pipeline.validate import blocked, exec_error, triggers
from gateway.rules import RequiredCondition, RuleSet, rule_findings
from gateway.settings import AskPolicy


def test_doctests() -> None:
    assert doctest.testmod(findings).failed == 0


def test_one_type_everywhere() -> None:
    assert safety.Finding is Finding
    (violation,) = rule_findings(RuleSet(database="demo", required_conditions=[RequiredCondition(
        name="exclude_cancelled", applies_to="orders", sql="status <> 'cancelled'", message="m")]),
        "SELECT 1 FROM orders")
    assert type(violation) is Finding and type(blocked(["write_statement"], ["no"])) is Finding


def test_a_safety_finding_always_carries_clause_and_position() -> None:
    (finding,) = safety.check("SELECT pg_sleep(1)").findings
    assert list(finding.as_dict()) == ["code", "message", "clause", "position"]
    unlocated = Finding("parse_error", "The SQL must be a string.")
    assert unlocated.as_dict() == {"code": "parse_error", "message": "The SQL must be a string.", "clause": None,
                                   "position": None}


def test_other_findings_carry_code_message_and_their_fields() -> None:
    error = exec_error("query_error", "boom", {"sqlstate": "42P01", "position": 32, "hint": None, "other": 1})
    assert error.as_dict() == {"code": "exec_error", "message": "boom", "error": "query_error",
                               "sqlstate": "42P01", "position": 32}
    assert blocked(["write_statement"], ["DELETE writes"]).as_dict() == {
        "code": "blocked", "message": "DELETE writes", "codes": ["write_statement"]}
    assert Finding("empty_result", "The query returned no rows.").as_dict() == {
        "code": "empty_result", "message": "The query returned no rows."}


def test_findings_stay_hashable_and_comparable() -> None:
    a = Finding("rule_violation", "m", detail={"rule": "r"})
    assert a == Finding("rule_violation", "m", detail={"rule": "r"}) != Finding("rule_violation", "m")
    assert len({a, Finding("empty_result", "x"), Finding("empty_result", "x")}) == 2


def test_registry_families_and_flags() -> None:
    families = {c.family for c in CODES.values()}
    assert families == {"safety", "outcome", "validation", "rules"}
    assert ALWAYS_REFLECT == {"exec_error", "blocked", "no_sql"}
    assert ALWAYS_REFLECT <= REFLECTABLE  # listing them is redundant, not an error
    assert not {c.name for c in CODES.values() if c.family == "safety"} & REFLECTABLE
    assert "repeated_sql" not in REFLECTABLE
    assert all(c.meaning.endswith((".", ")")) and name == c.name for name, c in CODES.items())


@pytest.mark.parametrize("reflect_on", [frozenset(), frozenset({"truncated"})])
def test_triggers_follow_the_registry_and_the_policy(reflect_on: frozenset[str]) -> None:
    found = [Finding("truncated", "cut"), Finding("exec_error", "boom"), Finding("empty_result", "none"),
             Finding("exec_error", "again")]
    expected = ["truncated", "exec_error"] if reflect_on else ["exec_error"]
    assert triggers(found, AskPolicy(reflect_on=reflect_on)) == expected
