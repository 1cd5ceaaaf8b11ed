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


def test_serve_on_a_terminal_prints_a_banner_and_readable_log_lines(demo_admin_dsn: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """On a terminal (a pseudo-terminal here) `serve` says where it serves, what, with which LLM and what is
    wrong with the login role (a superuser here), and logs readable lines instead of JSON."""
    import os
    import pty
    import subprocess
    import sys
    import threading
    import time

    from tests.serving import free_port

    port, llm_url = free_port(), f"http://127.0.0.1:{free_port()}/v1"
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "OPENAI_"))}
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--dsn", f"shop={demo_admin_dsn}",
                             "--port", str(port), "--llm-model", "banner-model", "--llm-base-url", llm_url],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env, cwd=tmp_path)
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal closed with the process
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, b"".join(chunks).decode(errors="replace")
            time.sleep(0.1)
        httpx.get(base + "/v1/databases")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(timeout=10)
        os.close(master)
    text = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    assert f"nl2sql-gateway is serving on {base}" in text, text
    assert f"Web console:  {base}/console/" in text and f"API docs:     {base}/docs" in text
    assert "Databases:    shop" in text
    assert f"LLM:          banner-model at {llm_url}" in text
    assert "WARNING shop: role" in text and "is a superuser" in text
    log_lines = [line for line in text.splitlines() if "gateway_started" in line or "gateway_stopping" in line]
    assert log_lines and not any(line.lstrip().startswith("{") for line in log_lines), log_lines
    assert not any(line.startswith('{"event"') for line in text.splitlines()), text
