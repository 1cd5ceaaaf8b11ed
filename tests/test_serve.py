"""`nl2sql-gateway serve` as a real process: JSON logs with the request id, clean stop on SIGTERM."""

from __future__ import annotations

import json
import signal

import httpx

from tests.serving import start_serve


def test_serve_logs_json_lines_with_request_context(demo_dsn: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc, base = start_serve({"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LOGGING__JSON_LOGS": "true"},
                             tmp_path)
    try:
        ok = httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT region_id FROM regions"},
                        headers={"x-request-id": "req-42"})
        blocked = httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT pg_sleep(1)"})
        assert ok.status_code == 200 and blocked.status_code == 422
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    # A drained stop is a clean exit (uvicorn alone would re-raise SIGTERM and die with 143).
    assert proc.returncode == 0, stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert any(line["event"] == "gateway_stopping" for line in lines)
    assert any(line["event"] == "Application shutdown complete." for line in lines)
    requests = [line for line in lines if line.get("event") == "request" and line.get("endpoint") == "/v1/sql"]
    assert len(requests) == 2
    first, second = requests
    # The client's X-Request-Id is a correlation id; the request id is the gateway's own, echoed in the header.
    assert first["correlation_id"] == "req-42" and ok.headers["x-correlation-id"] == "req-42"
    assert first["request_id"] == ok.headers["x-request-id"] != "req-42"
    assert first["verdict"] == "allowed" and first["rows"] > 0
    assert first["database"] == "demo" and len(first["query_hash"]) == 16 and first["duration_ms"] > 0
    assert "SELECT" not in json.dumps(first)  # the SQL text itself stays out of the logs
    assert second["verdict"] == "blocked" and second["codes"] == ["function_blocked"]
    assert second["request_id"] == blocked.headers["x-request-id"] != "req-42"
    assert all("timestamp" in line and "level" in line for line in lines)
