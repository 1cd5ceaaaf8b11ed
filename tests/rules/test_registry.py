"""Rule files: loading with line numbers, merging, reloading without a restart, hidden objects blocked."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from gateway import errors, safety
from gateway.rules import RulesRegistry, load_ruleset, rule_files
from gateway.safety import Policy

GOOD = """\
tables:
  orders:
    description: One row per order.
    columns:
      status: Fulfilment status.
  employees:
    columns:
      salary: {hidden: true}
  audit_log: {hidden: true}
instructions:
  - Exclude cancelled orders from revenue.
extra_functions: [My_Pure_Fn]
limits: {max_rows: 100, max_joins: 3}
required_conditions:
  - name: exclude_cancelled
    applies_to: orders
    sql: "status <> 'cancelled'"
    message: queries on orders must exclude cancelled orders
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_rule_file_becomes_a_ruleset(tmp_path: Path) -> None:
    write(tmp_path / "demo.yaml", GOOD)
    rules = RulesRegistry(tmp_path).get("demo")
    assert rules.table_descriptions == {"orders": "One row per order."}
    assert rules.column_descriptions == {"orders.status": "Fulfilment status."}
    assert rules.hidden_tables == {"audit_log"} and rules.hidden_columns == {"employees.salary"}
    assert rules.extra_functions == {"my_pure_fn"}
    assert rules.limits.max_rows == 100
    (cond,) = rules.required_conditions
    assert (cond.name, cond.applies_to, cond.line) == ("exclude_cancelled", "orders", 15)
    assert RulesRegistry(tmp_path).get("other").sources == ()  # no file: an empty rule set


def test_a_folder_of_files_is_merged_and_conflicts_are_errors(tmp_path: Path) -> None:
    write(tmp_path / "demo" / "a.yaml", "tables:\n  orders: {description: Orders.}\ninstructions: [One.]\n")
    write(tmp_path / "demo" / "b.yml", "tables:\n  regions: {hidden: true}\ninstructions: [Two.]\n")
    rules, problems = load_ruleset("demo", rule_files(tmp_path, "demo"))
    assert not problems
    assert rules.instructions == ["One.", "Two."] and rules.hidden_tables == {"regions"}
    write(tmp_path / "demo" / "c.yaml", "\n\ntables:\n  orders:\n    description: Again.\n")
    _, problems = load_ruleset("demo", rule_files(tmp_path, "demo"))
    (problem,) = problems
    assert problem.file.endswith("c.yaml") and problem.line == 4 and "already defined at" in problem.message


def test_problems_carry_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "demo.yaml", """\
        tables:
          orders:
            columns:
              status: {hiddn: true}
        limits:
          max_rows: lots
        required_conditions:
          - name: broken
            applies_to: orders
            sql: "status <>"
        bogus: 1
        """)
    _, problems = load_ruleset("demo", [path])
    found = {(p.line, p.message.split(":")[0]) for p in problems}
    assert (4, "unknown key 'tables.orders.columns.status.hiddn'") in found
    assert (6, "limits.max_rows") in found
    assert (11, "unknown key 'bogus'") in found
    assert all(p.file == str(path) for p in problems)
    write(path, "tables:\n  orders: [\n")
    (problem,) = load_ruleset("demo", [path])[1]
    assert problem.message.startswith("invalid YAML") and problem.line >= 2
    write(path, "instructions: [a]\ninstructions: [b]\n")
    (problem,) = load_ruleset("demo", [path])[1]
    assert (problem.line, problem.message) == (2, "duplicate key 'instructions'")


def test_a_bad_predicate_is_reported_on_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "demo.yaml", GOOD.replace("sql: \"status <> 'cancelled'\"", "sql: \"SELECT 1\""))
    (problem,) = load_ruleset("demo", [path])[1]
    assert problem.line == 17 and "exclude_cancelled" in problem.message


def test_edits_apply_without_a_restart(tmp_path: Path) -> None:
    path = write(tmp_path / "demo.yaml", "instructions: [First rule.]\n")
    registry = RulesRegistry(tmp_path)
    assert registry.get("demo").instructions == ["First rule."]
    write(path, "instructions: [First rule., A second and longer rule.]\n")
    assert registry.get("demo").instructions == ["First rule.", "A second and longer rule."]
    # a new file in the folder form is picked up too, and a removed one dropped
    extra = write(tmp_path / "demo" / "more.yaml", "tables:\n  orders:\n    columns:\n      note: {hidden: true}\n")
    assert registry.get("demo").hidden_columns == {"orders.note"}
    write(extra, "tables:\n  orders:\n    columns:\n      note: {hidden: false}\n")  # un-hidden on purpose
    assert registry.get("demo").hidden_columns == frozenset()
    extra.unlink()
    assert registry.get("demo").instructions == ["First rule.", "A second and longer rule."]


def test_a_bad_edit_keeps_the_last_good_rules_and_logs_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "demo.yaml", "tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
    registry = RulesRegistry(tmp_path)
    assert registry.get("demo").hidden_columns == {"employees.salary"}
    with capture_logs() as logs:
        write(path, "tables:\n  employees:\n    columns:\n      salary: {hidden: yes please}\n  oops\n")
        rules = registry.get("demo")
        registry.get("demo")  # logged once per change, not on every access
    assert rules.hidden_columns == {"employees.salary"}
    errors = [e for e in logs if e["event"] == "rules_reload_failed"]
    assert len(errors) == 1 and errors[0]["log_level"] == "error" and errors[0]["problems"]
    assert registry.problems("demo")
    write(path, "tables:\n  employees:\n    columns:\n      email: {hidden: true}\n")
    # salary's entry disappeared without `hidden: false`: it stays hidden (see the reload tests)
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}
    assert registry.problems("demo") == []


def test_broken_rules_at_start_with_nothing_saved_are_not_served(tmp_path: Path) -> None:
    # No good version to fall back on: the database is not served at all rather than served half-ruled.
    write(tmp_path / "demo.yaml", "tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n"
          "    typo_key: 1\n")
    registry = RulesRegistry(tmp_path)
    with pytest.raises(errors.RulesUnavailable) as raised:
        registry.get("demo")
    assert raised.value.code == "rules_unavailable" and raised.value.status == 503
    with pytest.raises(errors.RulesUnavailable):
        registry.policy_for("demo", Policy())
    assert registry.status("demo").state == "unavailable" and registry.status("demo").reason == "invalid"
    assert "salary" not in registry.status("demo").detail and str(tmp_path) not in registry.status("demo").detail
    # fixed: served from the next look at the files
    write(tmp_path / "demo.yaml", "tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
    assert RulesRegistry(tmp_path).get("demo").hidden_columns == {"employees.salary"}


def test_hidden_objects_are_blocked_by_the_safety_check(tmp_path: Path) -> None:
    write(tmp_path / "demo.yaml", GOOD)
    policy = RulesRegistry(tmp_path).policy_for("demo", Policy(max_joins=8))
    assert policy.max_joins == 3  # rules may only tighten
    assert "my_pure_fn" in policy.extra_functions
    for sql, code in [
        ("SELECT salary FROM employees", "hidden_column"),
        ("SELECT e.salary FROM employees e", "hidden_column"),
        ("SELECT * FROM employees", "hidden_column"),
        ("SELECT count(*) FROM audit_log", "hidden_table"),
        ("SELECT x FROM (SELECT avg(salary) AS x FROM employees) s", "hidden_column"),
    ]:
        verdict = safety.check(sql, policy)
        assert not verdict.allowed and code in verdict.codes, (sql, verdict.codes)
    assert safety.check("SELECT first_name FROM employees", policy).allowed
    assert safety.check("SELECT salary FROM employees", Policy()).allowed  # without the rules it would run
