"""Command-line operations end at `server.operation_timeout_s` with `deadline_exceeded`, even when the
database accepts the connection and never answers (a frozen host, a network cut without resets)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli.main import app
from gateway.testing.loopback import silent_listener


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    with silent_listener() as port:
        yield port


@pytest.mark.parametrize("command", [["schema", "silent"], ["rules", "check"], ["migrate"],
                                     ["keys", "list"], ["guideline", "list"]])
def test_an_operation_on_a_silent_server_ends_with_deadline_exceeded(silent_port: int, tmp_path: Path,
                                                                      command: list[str]) -> None:
    dsn = f"postgresql://nobody@127.0.0.1:{silent_port}/nothing"
    (tmp_path / "rules").mkdir()
    env = {"NL2SQL_CONFIG": "", "NL2SQL_DATABASES__SILENT__DSN": dsn, "NL2SQL_STORE__DSN": dsn,
           "NL2SQL_SERVER__OPERATION_TIMEOUT_S": "1", "NL2SQL_RULES_DIR": str(tmp_path / "rules")}
    if command == ["rules", "check"]:
        command = [*command, "--rules-dir", str(tmp_path / "rules")]
    result = CliRunner().invoke(app, command, env=env)
    assert result.exit_code in (1, 2), (result.stdout, result.stderr, result.exception)
    assert "deadline_exceeded" in result.stderr or "did not finish within 1 s" in result.stderr, \
        (result.stdout, result.stderr)
    assert "server.operation_timeout_s" in result.stderr
