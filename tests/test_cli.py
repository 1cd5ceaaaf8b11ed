"""The command line, run as users run it: a real process, stdin in, JSON out, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "gateway"]


def run(args: list[str], stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(CLI + args, input=stdin, capture_output=True, text=True, timeout=60, env=env)


def test_check_allowed_and_blocked_exit_codes() -> None:
    allowed = run(["check"], "SELECT 1")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["allowed"] is True
    blocked = run(["check"], "DELETE FROM orders")
    assert blocked.returncode == 1
    verdict = json.loads(blocked.stdout)
    assert verdict["allowed"] is False and "write_statement" in verdict["codes"]


def test_check_usage_errors_exit_2() -> None:
    assert run(["check"], "   \n").returncode == 2
    assert run(["check", "--database", "nope"], "SELECT 1").returncode == 2
    assert run(["check", "--no-such-flag"], "SELECT 1").returncode == 2


def test_check_jsonl_batch() -> None:
    lines = "\n".join([
        json.dumps({"id": "a", "sql": "SELECT 1"}),
        json.dumps({"id": "b", "sql": "SELECT pg_sleep(1)"}),
        json.dumps({"id": 3, "sql": "COPY orders TO '/tmp/x'"}),
    ])
    result = run(["check", "--jsonl"], lines)
    assert result.returncode == 1
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["id"] for o in out] == ["a", "b", 3]
    assert [o["allowed"] for o in out] == [True, False, False]
    assert out[1]["codes"] == ["function_blocked"]
    bad = run(["check", "--jsonl"], '{"id": 1}\nnot json\n' + json.dumps({"id": 2, "sql": "SELECT 2"}))
    assert bad.returncode == 2
    assert [json.loads(line)["id"] for line in bad.stdout.splitlines()] == [2]


@pytest.mark.parametrize("command", [[], ["serve"], ["demo"], ["check"], ["schema"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = run([*command, "--help"])
    assert result.returncode == 0
    assert "Usage" in result.stdout and len(result.stdout) > 200


def test_schema_command_on_the_demo_database(demo_dsn: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": demo_dsn}
    result = run(["schema", "demo"], env=env)
    assert result.returncode == 0, result.stderr
    names = {t["name"] for t in json.loads(result.stdout)["tables"]}
    assert {"orders", "customers", "regions", "events"} <= names
    assert run(["schema", "nope"], env=env).returncode == 2


def _commands(app: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the CLI (``serve``, ``rules check``, ...), groups included."""
    import typer

    group = typer.main.get_command(app) if isinstance(app, typer.Typer) else app  # type: ignore[arg-type]
    out = [prefix]
    if hasattr(group, "commands"):
        for name, command in group.commands.items():
            out += _commands(command, (*prefix, name))
    return out


def test_every_help_accepts_dash_h_and_reads_at_80_columns() -> None:
    from typer.testing import CliRunner

    from gateway.cli import app

    paths = _commands(app)
    assert ("serve",) in paths and ("rules", "check") in paths and len(paths) > 20
    for path in paths:
        result = CliRunner().invoke(app, [*path, "-h"], env={"COLUMNS": "80", "TERM": "xterm"}, terminal_width=80)
        assert result.exit_code == 0, (path, result.output)
        assert result.stdout.startswith("Usage:"), (path, result.stdout[:200])
        lines = result.stdout.splitlines()
        assert all(len(line) <= 80 for line in lines), (path, [line for line in lines if len(line) > 80])
        # Plain text, no boxes that squeeze an option's help into a third of the width.
        assert not any(ch in result.stdout for ch in "│╭╰"), path
        assert "-h, --help" in result.stdout, path
