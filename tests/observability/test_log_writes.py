"""Every log line reaches stderr in one write() call, newline included.

With PYTHONUNBUFFERED (the image sets it) each write() on stderr is its own system call; the workers of
``serve --workers N`` share one stderr, so a line written in two calls can be split by another worker's line,
and the collector gets text that is not JSON (a CI run once read ``{...}{...}`` from two workers).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator

import pytest
import structlog

from gateway.observability.logging import configure_logging, get_logger, log_request


class _Writes:
    """A stderr that remembers each write() call separately."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.line_buffering = False

    def write(self, text: str) -> int:
        self.calls.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@pytest.fixture
def restored() -> Iterator[None]:
    """The logging configuration before the test, put back after it."""
    saved, handlers, level = structlog.get_config(), logging.getLogger().handlers[:], logging.getLogger().level
    try:
        yield
    finally:
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers
        logging.getLogger().setLevel(level)


@pytest.mark.parametrize("json_logs", [True, False])
@pytest.mark.usefixtures("restored")
def test_each_line_is_one_write(monkeypatch: pytest.MonkeyPatch, json_logs: bool) -> None:
    # Set in the test itself: pytest's own capture replaces sys.stderr again between setup and call.
    writes = _Writes()
    monkeypatch.setattr(sys, "stderr", writes)
    configure_logging("INFO", json_logs=json_logs)
    get_logger("gateway.test").info("structlog_line", database="demo", problems=[])
    logging.getLogger("tests.log_writes").info("Application startup complete.")  # as uvicorn and asyncpg log
    log_request({"method": "POST", "path": "/v1/sql", "status": 200, "duration_ms": 1.5})
    try:
        raise ValueError("boom")
    except ValueError:
        get_logger("gateway.test").exception("with_traceback")
    assert len(writes.calls) == 4, writes.calls
    for call in writes.calls:
        assert call.endswith("\n"), call
        if json_logs:
            assert call.count("\n") == 1
            json.loads(call)
