"""structlog set-up: JSON lines with the request id bound to every line of a request.

The request id lives in a contextvar (``structlog.contextvars``) so that every stage logs it without
passing it around; ``serving.admission`` binds it when a request starts.

:func:`log_request` writes the one access line per request. Through structlog it cost about 13 us a request
(a lazy logger proxy bound anew on every call, then the processor chain); it writes the same line (same keys
in the same order, same values and encoder) with the processors :func:`configure_logging` installed called
directly, and the timestamp's date and time of day formatted once per second.
"""

from __future__ import annotations

import datetime
import json
import json.encoder
import logging
import sys
import time
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

import orjson
import structlog


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of writing: a stream captured once (a test runner's,
    replaced and closed after one CLI invocation) must not receive the logs of everything that follows."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


STDERR = _CurrentStderr()


def configure_logging(level: str = "INFO", json_logs: bool | None = True) -> None:
    """Route structlog and the standard library's logging to stderr in one format.

    ``json_logs=None`` chooses: JSON lines for a pipe or a file (a log collector), readable lines for a
    person at a terminal.
    """
    global _direct
    tty = sys.stderr.isatty()
    if json_logs is None:
        json_logs = not tty
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer(serializer=_dumps) if json_logs
        else structlog.dev.ConsoleRenderer(colors=tty)
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    processors: list[structlog.types.Processor] = [*shared, structlog.processors.format_exc_info, renderer]
    wrapper = structlog.make_filtering_bound_logger(logging.getLevelName(level))
    # log_request writes directly while this configuration is the one in force, and only JSON lines.
    _direct = _Direct(processors.copy(), wrapper, logging.getLevelName(level) <= logging.INFO, renderer) if json_logs \
        else None
    structlog.configure(
        processors=processors,
        wrapper_class=wrapper,
        # WriteLogger writes a line and its newline in one write(); PrintLogger's print() makes two, and with
        # PYTHONUNBUFFERED (the image sets it) each is its own system call, so two workers sharing stderr
        # could interleave their lines into one that is not JSON.
        logger_factory=structlog.WriteLoggerFactory(file=STDERR),  # type: ignore[arg-type]
        # Not cached: a cached logger keeps the configuration it first saw, so a later configure_logging()
        # (serve after eval in one process) or structlog.testing.capture_logs() would not reach it.
        cache_logger_on_first_use=False,
    )
    # uvicorn and asyncpg log through the standard library; keep them in the same stream and format.
    handler = logging.StreamHandler(STDERR)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(processors=[
        structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer,
    ], foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)  # our own request log replaces it


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)  # type: ignore[no-any-return]


def _dumps(obj: Any, **kw: Any) -> str:
    """structlog's serializer: one line of ASCII JSON.

    orjson writes it (a request line in well under a microsecond, where the standard library took several);
    datetimes and dataclasses go through ``default`` as they did. A line orjson would write with non-ASCII
    characters, or refuses (a key that is not a string, an integer past 64 bits, a lone surrogate), is
    written by the standard library as before: ASCII, with ``\\uXXXX`` escapes. Non-finite floats become
    ``null`` on orjson's path, not the invalid ``NaN`` of the standard library's."""
    if set(kw) == {"default"}:
        try:
            line = orjson.dumps(obj, default=kw["default"], option=_ORJSON)
        except TypeError:  # orjson.JSONEncodeError is one
            pass
        else:
            if line.isascii():
                return line.decode("ascii")
    if _make_encoder is None or set(kw) != {"default"} or isinstance(obj, str):
        return json.dumps(obj, **kw)
    encode = _make_encoder({}, kw.get("default"), encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return "".join(encode(obj, 0))


_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_ORJSON = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


@dataclass(frozen=True)
class _Direct:
    processors: list[structlog.types.Processor]
    wrapper: type[Any]
    info: bool  # the configured level lets INFO lines through
    renderer: structlog.types.Processor


_direct: _Direct | None = None
_access = structlog.get_logger("gateway.access")
_merge = structlog.contextvars.merge_contextvars


def log_request(fields: dict[str, Any]) -> None:
    """The request line: what ``get_logger("gateway.access").info("request", **fields)`` writes.

    Written directly when the configuration in force is the one :func:`configure_logging` installed for JSON
    lines; through structlog otherwise (console format, ``structlog.testing.capture_logs()``, another set-up).
    """
    direct = _direct
    config = structlog.get_config()
    # Compared by content: structlog.testing.capture_logs() swaps the processors inside the same list.
    if direct is None or config["processors"] != direct.processors or config["wrapper_class"] is not direct.wrapper:
        _access.info("request", **fields)
        return
    if not direct.info:
        return
    # The order structlog builds: the call's keys, "event", the bound context, "level", "timestamp".
    event: dict[str, Any] = {**fields, "event": "request"}
    _merge(None, "info", event)
    event["level"] = "info"
    event["timestamp"] = iso_utc(time.time_ns())
    # format_exc_info has nothing to do without exc_info; WriteLogger writes the line and flushes. A
    # line-buffered stream (stderr is, since Python 3.9) has flushed at the newline already.
    stream = sys.stderr
    stream.write(str(direct.renderer(None, "info", event)) + "\n")
    if not getattr(stream, "line_buffering", False):
        stream.flush()


_second = -1
_second_text = ""


def iso_utc(ns: int) -> str:
    """``datetime.now(timezone.utc).isoformat()`` with "Z" for "+00:00" (structlog's TimeStamper(fmt="iso",
    utc=True)) for the time ``ns`` (nanoseconds since the epoch, as ``time.time_ns()``; truncated to
    microseconds as ``datetime.now`` does), the part up to the second formatted once per second."""
    global _second, _second_text
    seconds, micros = divmod(ns // 1000, 1_000_000)
    if seconds != _second:
        _second_text = datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()[:-6]
        _second = seconds
    return f"{_second_text}.{micros:06d}Z" if micros else f"{_second_text}Z"
