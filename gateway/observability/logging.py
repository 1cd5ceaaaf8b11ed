"""structlog set-up: JSON lines with the request id bound to every line of a request.

The request id lives in a contextvar (``structlog.contextvars``) so that every stage logs it without
passing it around; ``api.middleware`` binds it when a request starts.
"""

from __future__ import annotations

import logging
import sys

import structlog


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of writing: a stream captured once (a test runner's,
    replaced and closed after one CLI invocation) must not receive the logs of everything that follows."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


STDERR = _CurrentStderr()


def configure_logging(level: str = "INFO", json_logs: bool = True) -> None:
    """Route structlog and the standard library's logging to stderr in one format."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(file=STDERR),  # type: ignore[arg-type]
        # Not cached: a cached logger keeps the configuration it first saw, so a later configure_logging()
        # (serve after eval in one process) or structlog.testing.capture_logs() would not reach it.
        cache_logger_on_first_use=False,
    )
    # uvicorn and asyncpg log through the standard library; keep them in the same stream and format.
    handler = logging.StreamHandler(STDERR)  # type: ignore[arg-type]
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(processors=[
        structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer,
    ], foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)  # our own request log replaces it


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)  # type: ignore[no-any-return]
