"""What the request path does cheaply must come out the same as what it replaced: the access log line
(written without structlog's per-call machinery), its timestamp, and the memoised loopback verdict."""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import structlog

from gateway import errors
from gateway.api.app import create_app
from gateway.observability.logging import configure_logging, get_logger, iso_utc, log_request
from gateway.serving import admission as middleware
from tests.api.conftest import demo_settings

FIELDS: dict[str, Any] = {"method": "POST", "path": "/v1/sql", "endpoint": "/v1/sql", "status": 200,
                          "duration_ms": 1.234}


@pytest.fixture
def stderr(capsys: pytest.CaptureFixture[str]) -> Iterator[pytest.CaptureFixture[str]]:
    """What the logs write to stderr (they write to whatever sys.stderr is); the previous logging
    configuration restored after."""
    saved, handlers, level = structlog.get_config(), logging.getLogger().handlers[:], logging.getLogger().level
    try:
        yield capsys
    finally:
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers
        logging.getLogger().setLevel(level)


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_the_request_line_is_the_one_structlog_writes(stderr: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", json_logs=True)
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id="r-1", api_key=None, database="demo", rows=17,
                                           truncated=False, verdict="allowed", status=999)
    try:
        get_logger("gateway.access").info("request", **FIELDS)
        log_request(dict(FIELDS))
    finally:
        structlog.contextvars.clear_contextvars()
    by_structlog, direct = _lines(stderr)
    old, new = json.loads(by_structlog), json.loads(direct)
    assert list(old) == list(new)  # same keys, same order
    assert new["status"] == 200  # the call's own value wins over a bound one, as in structlog
    old.pop("timestamp"), new.pop("timestamp")
    assert old == new
    # Byte for byte, up to the clock.
    assert by_structlog.replace(json.loads(by_structlog)["timestamp"], "T") == \
        direct.replace(json.loads(direct)["timestamp"], "T")


def test_a_level_above_info_writes_no_request_line(stderr: pytest.CaptureFixture[str]) -> None:
    configure_logging("WARNING", json_logs=True)
    log_request(dict(FIELDS))
    assert _lines(stderr) == []


def test_other_configurations_go_through_structlog(stderr: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", json_logs=False)
    log_request(dict(FIELDS))
    (line,) = _lines(stderr)
    assert "request" in line and "endpoint=/v1/sql" in line  # the console format
    configure_logging("INFO", json_logs=True)
    with structlog.testing.capture_logs() as captured:
        log_request(dict(FIELDS))
    assert captured == [{**FIELDS, "event": "request", "log_level": "info"}]
    assert _lines(stderr) == []


@pytest.mark.parametrize("ns", [0, 1, 999, 1_000, 999_999_999, 1_000_000_000, 1_764_100_834_000_000_000,
                                1_764_100_834_000_001_000, 1_764_100_834_123_456_789, 1_764_100_835_999_999_999,
                                4_102_444_800_000_000_000])
def test_the_timestamp_is_the_one_structlog_formats(ns: int) -> None:
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(microseconds=ns // 1000)
    assert iso_utc(ns) == moment.isoformat().replace("+00:00", "Z")
    assert iso_utc(ns) == iso_utc(ns)  # and again from the second's cached text


@pytest.mark.parametrize(("host", "origin", "allowed"), [
    (b"localhost:8000", None, True),
    (b"127.0.0.1", b"http://localhost:3000", True),
    (b"[::1]:80", None, True),
    (b"localhost", b"null", False),  # an opaque origin (a sandboxed frame, a file) is no loopback page
    (b"evil.example", None, False),
    (b"localhost", b"http://evil.example", False),
    (b"localhost", b"not a url", False),
])
def test_the_loopback_verdict_is_the_same_every_time(host: bytes, origin: bytes | None, allowed: bool) -> None:
    headers = {b"host": host} if origin is None else {b"host": host, b"origin": origin}
    for _ in range(3):  # the first computes it, the others read it back
        try:
            middleware._addressed_to_loopback(headers)
            refused = None
        except middleware._Refused as exc:
            refused = exc.error
        assert (refused is None) == allowed
        if refused is not None:
            assert isinstance(refused, errors.Forbidden)
            assert refused.extra["host"] == host.decode()


async def test_fastapi_telemetry_is_asked_once_per_process(demo_dsn: str) -> None:
    app = create_app(demo_settings(demo_dsn))
    asked = []
    telemetry = app._native_telemetry  # type: ignore[attr-defined]
    real = telemetry.enabled
    telemetry.enabled = lambda: asked.append(1) or real()
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            for _ in range(3):
                assert (await http.get("/healthz")).status_code == 200
    assert asked == [1]
    # With it off, FastAPI's layers between its error middleware and the gateway's pass requests through.
    layers = []
    layer: Any = app.middleware_stack
    while layer is not None and not isinstance(layer, middleware.GatewayMiddleware):
        layers.append(type(layer).__name__)
        layer = getattr(layer, "app", None)
    assert layers == ["ServerErrorMiddleware"]


class _Odd:
    def __repr__(self) -> str:
        return "<odd é>"


class _Own:
    def __structlog__(self) -> str:
        return "own"


@pytest.mark.parametrize("event", [
    {"event": "request", "status": 200, "duration_ms": 0.1, "api_key": None, "truncated": False},
    {"s": "é ü \u2028 \x00 \ud800 \"quoted\" \\", "big": 10**30, "neg": -1.5e300, "nan": float("nan"),
     "inf": float("-inf"), "nested": {"a": [1, (2, 3), {"b": None}]}, 7: "int key", 1.5: "float key",
     True: "bool key", None: "none key"},
    {"odd": _Odd(), "own": _Own(), "list": [_Odd(), {"x": _Own()}], "set": {1}},
    {},
])
def test_the_json_serializer_writes_what_json_dumps_writes(event: dict[Any, Any]) -> None:
    """The same JSON as json.dumps, on one ASCII line (orjson's compact form, or the standard library's)."""
    from structlog.processors import _json_fallback_handler

    from gateway.observability.logging import _dumps

    line = _dumps(event, default=_json_fallback_handler)
    assert line.isascii() and "\n" not in line
    expected = json.dumps(event, default=_json_fallback_handler)
    assert json.loads(line, parse_constant=str) == json.loads(expected, parse_constant=str)
    assert _dumps("text", default=_json_fallback_handler) == json.dumps("text")


def test_the_json_serializer_is_orjson_unless_it_cannot_write_the_line_as_ascii() -> None:
    from structlog.processors import _json_fallback_handler

    from gateway.observability.logging import _dumps

    assert _dumps({"a": 1, "b": [True, None]}, default=_json_fallback_handler) == '{"a":1,"b":[true,null]}'
    assert _dumps({"a": "é"}, default=_json_fallback_handler) == '{"a": "\\u00e9"}'  # the standard library's


def test_request_ids_are_32_hex_digits_and_never_repeat() -> None:
    ids = [middleware.new_request_id() for _ in range(2000)]  # several 4 KiB reads
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("line_buffering", [True, False])
def test_the_request_line_reaches_the_stream_at_once(monkeypatch: pytest.MonkeyPatch, stderr: pytest.CaptureFixture[str],
                                                     line_buffering: bool) -> None:
    """Whether stderr is line-buffered (flushed at the newline) or not (flushed after the write), the line is
    in the file when log_request returns: a crash right after loses no request line."""
    import io

    raw = io.BytesIO()
    stream = io.TextIOWrapper(io.BufferedWriter(raw, buffer_size=1 << 16), encoding="utf-8",
                              line_buffering=line_buffering)
    configure_logging("INFO", json_logs=True)
    monkeypatch.setattr("sys.stderr", stream)
    log_request(dict(FIELDS))
    assert json.loads(raw.getvalue())["endpoint"] == FIELDS["endpoint"]


async def test_with_fastapi_telemetry_on_every_request_takes_fastapis_routing(demo_dsn: str) -> None:
    """Its spans (the route, the dependencies) come from FastAPI's own routing: no compiled route then."""
    app = create_app(demo_settings(demo_dsn))
    app._native_telemetry.enabled = lambda: True  # type: ignore[attr-defined]
    fast = app.state.fast_routes
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            for _ in range(3):
                response = await http.post("/v1/check", json={"database": "demo", "sql": "SELECT 1"})
                assert response.status_code == 200
    assert fast.served == 0
    app = create_app(demo_settings(demo_dsn))  # and with it off (as in this test run), they are compiled
    fast = app.state.fast_routes
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            for _ in range(3):
                assert (await http.post("/v1/check", json={"database": "demo", "sql": "SELECT 1"})).status_code == 200
    assert fast.served == 2
