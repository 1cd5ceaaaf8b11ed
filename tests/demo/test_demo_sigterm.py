"""`nl2sql-gateway demo` as a real process: SIGTERM stops the gateway and its embedded Postgres, as Ctrl-C does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from gateway.demo.embedded import EmbeddedPostgres
from tests.serving import free_port


def test_sigterm_stops_the_demo_and_its_postgres(tmp_path: Path) -> None:
    data_dir = tmp_path / "pgdata"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "OPENAI_"))}
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "demo", "--data-dir", str(data_dir),
                             "--port", str(port)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300  # initdb and the demo data on a busy machine
        served = False
        while not served and proc.poll() is None and time.monotonic() < deadline:
            try:
                served = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.2)
        assert served, proc.communicate(timeout=30)[0] if proc.poll() is not None else "demo did not start"
        assert EmbeddedPostgres(data_dir).is_running()
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    still_running = EmbeddedPostgres(data_dir).is_running()
    if still_running:  # leave nothing behind, then fail
        EmbeddedPostgres(data_dir).start()  # adopts the running server (and opens its directory to it)
        EmbeddedPostgres(data_dir).stop(mode="immediate")
    assert proc.returncode == 0, output
    assert "stopping embedded Postgres" in output
    assert not still_running
