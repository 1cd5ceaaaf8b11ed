"""``check_rules`` and ``nl2sql-gateway rules check`` against the live demo schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli.main import app
from gateway.execute import Targets
from gateway.execute.introspect import Schema, introspect
from gateway.rules import check_rules
from gateway.settings import DatabaseSettings, Settings

ROOT = Path(__file__).resolve().parents[2]

BROKEN = """\
tables:
  orders:
    columns:
      status: Fulfilment status.
      stauts: {hidden: true}
  order: {description: typo}
required_conditions:
  - name: exclude_cancelled
    applies_to: orders
    sql: "state <> 'cancelled'"
  - name: on_nothing
    applies_to: invoices
    sql: "paid"
"""


@pytest.fixture(scope="module")
async def demo_schema(demo_dsn: str) -> Schema:
    targets = await Targets.open(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}))
    try:
        return await introspect(targets.by_name["demo"], everything=True)  # as `rules check` does
    finally:
        await targets.close()


def test_the_shipped_demo_rules_are_clean(demo_schema: Schema) -> None:
    problems = check_rules(ROOT / "rules", {"demo": demo_schema})
    assert [p for p in problems if p.severity == "error"] == []


def test_unknown_tables_and_columns_are_errors_with_lines(tmp_path: Path, demo_schema: Schema) -> None:
    (tmp_path / "demo.yaml").write_text(BROKEN)
    (tmp_path / "nosuchdb.yaml").write_text("instructions: [x]\n")
    problems = check_rules(tmp_path, {"demo": demo_schema})
    errors = {(Path(p.file).name, p.line, p.message) for p in problems if p.severity == "error"}
    assert ("demo.yaml", 5, "unknown column orders.stauts in database 'demo' (did you mean 'status'?)") in errors
    assert ("demo.yaml", 6, "unknown table 'order' in database 'demo' (did you mean 'orders'?)") in errors
    assert any(line == 10 and "unknown column orders.state" in m for _, line, m in errors)
    assert any(line == 12 and "unknown table 'invoices'" in m for _, line, m in errors)
    assert len(errors) == 4
    (warning,) = [p for p in problems if p.severity == "warning"]
    assert warning.file.endswith("nosuchdb.yaml")


def run_cli(demo_dsn: str, *args: str) -> tuple[int, str, str]:
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_CONFIG": ""}
    result = CliRunner().invoke(app, ["rules", "check", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_cli_exit_codes(tmp_path: Path, demo_dsn: str) -> None:
    (tmp_path / "demo.yaml").write_text("tables:\n  orders:\n    columns:\n      status: Fulfilment.\n")
    code, out, err = run_cli(demo_dsn, "--rules-dir", str(tmp_path))
    assert code == 0, (out, err)
    assert "0 error(s)" in err

    (tmp_path / "demo.yaml").write_text(BROKEN)
    code, out, err = run_cli(demo_dsn, "--rules-dir", str(tmp_path), "--database", "demo")
    assert code == 1
    lines = out.splitlines()
    assert f"{tmp_path / 'demo.yaml'}:5: unknown column orders.stauts in database 'demo' (did you mean 'status'?)" \
        in lines
    assert "4 error(s)" in err

    (tmp_path / "demo.yaml").write_text("tables:\n  orders:\n    colums: {}\n")
    code, out, _ = run_cli(demo_dsn, "--rules-dir", str(tmp_path))
    assert code == 1 and f"{tmp_path / 'demo.yaml'}:3: unknown key 'tables.orders.colums'" in out

    code, _, err = run_cli(demo_dsn, "--rules-dir", str(tmp_path), "--database", "nope")
    assert code == 2 and "unknown database" in err


def test_cli_unreachable_database_is_a_usage_error(tmp_path: Path) -> None:
    env = {"NL2SQL_DATABASES__DOWN__DSN": "postgresql://nobody@127.0.0.1:1/none",
           "NL2SQL_DATABASES__DOWN__POOL_MIN_SIZE": "0", "NL2SQL_DATABASES__DOWN__LIMITS__ACQUIRE_TIMEOUT_S": "2",
           "NL2SQL_CONFIG": ""}
    result = CliRunner().invoke(app, ["rules", "check", "--rules-dir", str(tmp_path)], env=env)
    assert result.exit_code == 2 and "database_unavailable" in result.stderr


def test_check_command_applies_the_rules_of_the_database(tmp_path: Path, demo_dsn: str) -> None:
    (tmp_path / "demo.yaml").write_text("tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_RULES_DIR": str(tmp_path), "NL2SQL_CONFIG": ""}
    blocked = CliRunner().invoke(app, ["check", "--database", "demo"], input="SELECT avg(salary) FROM employees",
                                 env=env)
    assert blocked.exit_code == 1 and "hidden_column" in blocked.stdout
    allowed = CliRunner().invoke(app, ["check", "--database", "demo"], input="SELECT count(*) FROM employees", env=env)
    assert allowed.exit_code == 0


def test_cli_missing_rules_folder_is_not_reported_clean(tmp_path: Path, demo_dsn: str) -> None:
    code, out, err = run_cli(demo_dsn, "--rules-dir", str(tmp_path / "no-such-folder"))
    assert code == 2 and out == ""
    assert "no rules folder at" in err and "nothing was checked" in err
    assert "error(s)" not in err
