"""`nl2sql-gateway serve` as a real process: JSON logs with the request id, clean stop on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_logs_json_lines_with_request_context(demo_dsn: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LOGGING__JSON_LOGS": "true"}
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--port", str(port)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        ok = httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT region_id FROM regions"},
                        headers={"x-request-id": "req-42"})
        blocked = httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT pg_sleep(1)"})
        assert ok.status_code == 200 and blocked.status_code == 422
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status tells how it stopped.
    assert proc.returncode in (0, -signal.SIGTERM), stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert any(line["event"] == "gateway_stopping" for line in lines)
    assert any(line["event"] == "Application shutdown complete." for line in lines)
    requests = [line for line in lines if line.get("event") == "request" and line.get("endpoint") == "/v1/sql"]
    assert len(requests) == 2
    first, second = requests
    assert first["request_id"] == "req-42" and first["verdict"] == "allowed" and first["rows"] > 0
    assert first["database"] == "demo" and len(first["query_hash"]) == 16 and first["duration_ms"] > 0
    assert "SELECT" not in json.dumps(first)  # the SQL text itself stays out of the logs
    assert second["verdict"] == "blocked" and second["codes"] == ["function_blocked"]
    assert second["request_id"] == blocked.headers["x-request-id"] != "req-42"
    assert all("timestamp" in line and "level" in line for line in lines)
