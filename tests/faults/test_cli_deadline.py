"""Command-line operations end at `server.operation_timeout_s` with `deadline_exceeded`, even when the
database accepts the connection and never answers (a frozen host, a network cut without resets)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli import app


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


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
