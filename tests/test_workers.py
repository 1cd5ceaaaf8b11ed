"""`serve --workers 2` as real processes: both workers serve one port, /metrics adds up every worker's counts
whichever worker answers the scrape, and SIGTERM drains all of them, exit status 0."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import psutil
from prometheus_client import CollectorRegistry, multiprocess

from tests.serving import start_serve

ENDPOINT = "/v1/databases"


def _workers(pid: int) -> list[int]:
    return [c.pid for c in psutil.Process(pid).children() if "spawn_main" in " ".join(c.cmdline())]


def _served_by(metrics_dir: Path, pid: int, tmp: Path) -> float:
    """Requests to ENDPOINT counted by one worker alone (its own file, collected on its own)."""
    alone = tmp / f"alone-{pid}"
    alone.mkdir(parents=True)
    for file in metrics_dir.glob(f"counter_{pid}.db"):
        shutil.copy(file, alone / file.name)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(alone))
    return _count(registry.collect())


def _count(families) -> float:  # type: ignore[no-untyped-def]
    return sum(s.value for f in families for s in f.samples
               if s.name == "nl2sql_requests_total" and s.labels.get("endpoint") == ENDPOINT)


def _scraped(text: str) -> float:
    pattern = rf'^nl2sql_requests_total{{endpoint="{re.escape(ENDPOINT)}",status="200"}} (\S+)$'
    match = re.search(pattern, text, re.M)
    assert match, text
    return float(match.group(1))


def _two_workers(pid: int) -> list[int]:
    """The supervisor's two workers, once both are started (/healthz may answer while the second one starts)."""
    deadline = time.monotonic() + 120  # a bound on waiting for a condition, generous for a loaded machine
    while len(workers := _workers(pid)) != 2:
        assert time.monotonic() < deadline, f"workers: {workers}"
        time.sleep(0.1)
    return workers


def test_two_workers_serve_one_port_and_metrics_add_up(demo_dsn: str, tmp_path: Path) -> None:
    metrics_dir = tmp_path / "prometheus"
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_AUTH__ENABLED": "false",
           "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    proc, base = start_serve(env, tmp_path, args=("--workers", "2"))
    try:
        workers = _two_workers(proc.pid)
        sent = 0
        per_worker = dict.fromkeys(workers, 0.0)
        # Each request on a new connection: the kernel hands connections to whichever worker accepts first.
        while sent < 400 and (sent < 20 or not all(per_worker.values())):
            assert httpx.get(base + ENDPOINT, timeout=30).status_code == 200
            sent += 1
            if sent % 20 == 0:
                per_worker = {pid: _served_by(metrics_dir, pid, tmp_path / str(sent)) for pid in workers}
        assert all(per_worker.values()), f"one worker served all {sent} requests: {per_worker}"
        # A worker counts a request once its answer is written, so the client may read the files a moment
        # before the last count lands: read again until it has (or give up after 30 s, a real failure).
        for attempt in range(600):
            if sum(per_worker.values()) == sent:
                break
            time.sleep(0.05)
            per_worker = {pid: _served_by(metrics_dir, pid, tmp_path / f"{sent}-{attempt}") for pid in workers}
        assert sum(per_worker.values()) == sent
        # Every scrape, answered by one worker or the other, reports what both served.
        for _ in range(6):
            assert _scraped(httpx.get(base + "/metrics", timeout=30).text) == sent
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr


def test_sigterm_drains_every_worker_and_removes_the_metrics_dir(demo_dsn: str, tmp_path: Path) -> None:
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_AUTH__ENABLED": "false",
           "NL2SQL_LOGGING__JSON_LOGS": "true"}
    proc, base = start_serve(env, tmp_path, args=("--workers", "2"),
                             unset=("PROMETHEUS_MULTIPROC_DIR",))
    workers = _workers(proc.pid)
    assert len(workers) == 2
    assert httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT count(*) FROM regions"},
                      timeout=30).status_code == 200
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in workers)
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    started = next(line for line in lines if line["event"] == "workers_started")
    assert sorted(started["pids"]) == sorted(workers)
    # Every worker that started its lifespan ran it to the end (pools closed), even one still starting when
    # the signal came; the supervisor saw them all exit cleanly.
    started_apps = sum(line["event"] == "Application startup complete." for line in lines)
    assert started_apps >= 1
    assert sum(line["event"] == "Application shutdown complete." for line in lines) == started_apps
    assert any(line["event"] == "workers_stopped" and line["status"] == 0 for line in lines)
    assert not Path(started["metrics_dir"]).exists()  # the supervisor's own directory is removed


def _one_request(port: int, request: bytes) -> str:
    """'refused' (no connection), 'answered' (an HTTP response came) or 'dropped' (connected, no answer)."""
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    except ConnectionRefusedError:
        return "refused"
    received = b""
    try:
        with conn:
            conn.sendall(request)
            while chunk := conn.recv(65536):
                received += chunk
    except OSError:  # reset, or no answer in 30 s
        pass
    return "answered" if received.startswith(b"HTTP/1.1 ") else "dropped"


def test_no_accepted_connection_goes_unanswered_during_the_drain(demo_dsn: str, tmp_path: Path) -> None:
    """A stream of requests, each on a new connection, while `serve --workers 2` drains on SIGTERM: each
    connection the kernel accepted gets an HTTP answer (200, or 503 shutting_down); later ones are refused."""
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_AUTH__ENABLED": "false"}
    proc, base = start_serve(env, tmp_path, args=("--workers", "2"))
    port = int(base.rsplit(":", 1)[1])
    body = json.dumps({"database": "demo", "sql": "SELECT pg_sleep(0.3)"}).encode()
    requests = [
        b"GET /v1/databases HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        b"POST /v1/sql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode() + body,
    ]
    outcomes: list[str] = []
    signalled = threading.Event()

    def client(request: bytes) -> None:
        while True:
            outcome = _one_request(port, request)
            outcomes.append(outcome)
            if outcome == "refused" and signalled.is_set():
                return
            if outcome == "refused":  # the server must listen until told to stop
                outcomes.append("refused before the signal")
                return

    threads = [threading.Thread(target=client, args=(requests[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    try:
        while outcomes.count("answered") < 40:
            time.sleep(0.01)
        signalled.set()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    finally:
        signalled.set()
        if proc.poll() is None:
            proc.kill()
        for thread in threads:
            thread.join(timeout=60)
    assert proc.returncode == 0, stderr
    assert outcomes.count("dropped") == 0, {o: outcomes.count(o) for o in set(outcomes)}
    assert "refused before the signal" not in outcomes and outcomes.count("refused") == len(threads)


def test_a_worker_stopped_on_its_own_leaves_the_others_serving(demo_dsn: str, tmp_path: Path) -> None:
    """SIGTERM to one worker (an operator, a memory watchdog) drains that worker only: the listener it shares
    keeps taking connections for the others and for the worker started in its place."""
    metrics_dir = tmp_path / "prometheus"
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_AUTH__ENABLED": "false",
           "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    proc, base = start_serve(env, tmp_path, args=("--workers", "2"))
    try:
        first, second = _two_workers(proc.pid)
        for sent in range(400):  # both serve (a worker still starting would stop before it listens)
            assert httpx.get(base + ENDPOINT, timeout=30).status_code == 200
            if sent % 10 == 9 and all(_served_by(metrics_dir, pid, tmp_path / str(sent)) for pid in (first, second)):
                break
        psutil.Process(first).send_signal(signal.SIGTERM)
        psutil.Process(first).wait(timeout=60)
        answers = [httpx.get(base + ENDPOINT, timeout=10).status_code for _ in range(20)]
        assert answers == [200] * 20
        for _ in range(600):  # the supervisor starts a new worker in its place
            if len(_workers(proc.pid)) == 2:
                break
            time.sleep(0.1)
        assert second in _workers(proc.pid) and len(_workers(proc.pid)) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
