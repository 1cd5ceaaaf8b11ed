"""CLI commands as a newcomer runs them: no config file, stdout machine-readable, logs on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("NL2SQL_")}
HELD_OUT = [  # the shape of the issue-9 corpus: ids, SQL, and the demo's hidden columns in play
    {"id": "ok", "sql": "SELECT name FROM regions"},
    {"id": "hidden", "sql": "SELECT email FROM customers"},
    {"id": "hidden-star", "sql": "SELECT * FROM employees"},
    {"id": "write", "sql": "DELETE FROM orders"},
]


def run(args: list[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=cwd, env=CLEAN_ENV, input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_check_jsonl_database_demo_uses_the_shipped_rules_without_config(where: str, tmp_path: Path) -> None:
    cwd = ROOT if where == "checkout" else tmp_path
    assert not (cwd / "nl2sql-gateway.toml").exists()
    result = run(["check", "--jsonl", "--database", "demo"], cwd, "\n".join(json.dumps(x) for x in HELD_OUT))
    assert result.returncode == 1, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]  # every stdout line is JSON
    verdicts = {line["id"]: line for line in lines}
    assert list(verdicts) == ["ok", "hidden", "hidden-star", "write"]
    assert verdicts["ok"]["allowed"] is True
    assert verdicts["hidden"]["codes"] == ["hidden_column"]  # customers.email is hidden by rules/demo.yaml
    assert "hidden_column" in verdicts["hidden-star"]["codes"]
    assert "write_statement" in verdicts["write"]["codes"]
    assert "rules_loaded" in result.stderr  # the log line goes to stderr, not into the JSON stream


def test_check_database_prints_only_json_on_stdout() -> None:
    result = run(["check", "--database", "demo"], ROOT, "SELECT salary FROM employees")
    assert result.returncode == 1
    assert json.loads(result.stdout)["codes"] == ["hidden_column"]


def test_check_unknown_database_without_rules_is_a_usage_error(tmp_path: Path) -> None:
    result = run(["check", "--database", "nope"], tmp_path, "SELECT 1")
    assert result.returncode == 2 and result.stdout == ""
    assert "unknown database 'nope'" in result.stderr and "no rule file" in result.stderr


def test_version(tmp_path: Path) -> None:
    from gateway import __version__

    result = run(["--version"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"nl2sql-gateway {__version__}"
