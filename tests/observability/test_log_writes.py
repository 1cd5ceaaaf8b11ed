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

import httpx
import pytest
import structlog
import structlog.testing

from gateway.api.app import create_app
from gateway.observability.logging import configure_logging, get_logger, log_request
from gateway.settings import AuthSettings, DatabaseSettings, Settings

PIPE_BUF = 4096  # Linux: the most a pipe write keeps whole


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


async def test_a_long_path_cannot_make_a_request_line_too_long_to_write_whole(demo_dsn: str) -> None:
    """Each line is one write(), which a pipe keeps whole up to PIPE_BUF only: a client's path is cut."""
    settings = Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}, auth=AuthSettings(enabled=False))
    app = create_app(settings)
    path = "/v1/" + "\u00e9" * 5_000  # six bytes a character once JSON escapes it
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        with structlog.testing.capture_logs() as logs:
            response = await client.get(path)
    assert response.status_code == 404
    (line,) = [entry for entry in logs if entry.get("event") == "request"]
    assert line["path"].startswith("/v1/\u00e9") and line["path"].endswith("...")
    assert len(json.dumps(line)) + 200 < PIPE_BUF  # the timestamp and bound fields the renderer adds
