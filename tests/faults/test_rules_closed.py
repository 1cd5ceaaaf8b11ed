"""Rules fail closed at every start: `nl2sql-gateway serve` (one process, and `--workers 2` with a worker
killed) whose rule file is broken (empty, a directory, a link to nothing, gone, the rules folder gone) never
answers a hidden column, whether it started good and saved its rules or started broken with nothing saved.

The target DSN is the demo's superuser: Postgres itself would hand out `employees.salary`, so only the rules
stand between it and the client. Nothing here waits on time: each step polls until the process answers.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest
from prometheus_client import CollectorRegistry, multiprocess

from gateway.config.assets import shipped_dir
from tests.serving import LoggedProcess, start_serve

PROBES = [
    "SELECT salary FROM employees",
    "SELECT SALARY AS pay FROM public.employees ORDER BY 1 DESC",
    "SELECT * FROM employees",
    "SELECT to_jsonb(e) AS j FROM employees e",
    "SELECT row_to_json(e) AS j FROM employees AS e",
    "SELECT e::text AS t FROM employees e",
    "SELECT max(salary) AS m, sum(salary) AS s FROM employees",
    "SELECT employee_id FROM employees WHERE salary > 0 ORDER BY salary DESC LIMIT 1",
    "SELECT (SELECT max(e.salary) FROM employees e) AS m",
]
SQL_ENDPOINT = "/v1/sql"


def break_empty(rules: Path) -> None:
    (rules / "demo.yaml").write_text("")


def break_directory(rules: Path) -> None:
    (rules / "demo.yaml").unlink()
    (rules / "demo.yaml").mkdir()


def break_dangling(rules: Path) -> None:
    (rules / "demo.yaml").unlink()
    (rules / "demo.yaml").symlink_to(rules / "moved-away.yaml")


def break_missing(rules: Path) -> None:
    (rules / "demo.yaml").unlink()


def break_folder(rules: Path) -> None:
    shutil.rmtree(rules)


FORMS: dict[str, Callable[[Path], None]] = {"empty": break_empty, "directory": break_directory,
                                            "dangling": break_dangling, "missing": break_missing,
                                            "folder_missing": break_folder}


@pytest.fixture(scope="module")
async def salaries(demo_admin_dsn: str) -> set[str]:
    """Every salary as text the way a JSON body could carry it."""
    conn = await asyncpg.connect(demo_admin_dsn)
    try:
        values = [r["salary"] for r in await conn.fetch("SELECT salary FROM employees WHERE salary IS NOT NULL")]
    finally:
        await conn.close()
    assert values
    return {str(v) for v in values} | {repr(float(v)) for v in values}


class Server:
    def __init__(self, tmp: Path, dsn: str, workers: int, extra: dict[str, str] | None = None) -> None:
        self.tmp = tmp
        self.rules = tmp / "rules"
        self.metrics_dir = tmp / "prometheus"
        self.workers = workers
        self.env = {"NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_AUTH__ENABLED": "false",
                    "NL2SQL_RULES_DIR": str(self.rules), "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir),
                    **(extra or {})}
        self.proc: LoggedProcess | None = None
        self.base = ""

    def start(self) -> None:
        args = ("--workers", str(self.workers)) if self.workers > 1 else ()
        self.proc, self.base = start_serve(self.env, self.tmp, args=args)

    def kill(self) -> None:
        """SIGKILL: one worker (the supervisor respawns it), or the whole single process (started again)."""
        assert self.proc is not None
        if self.workers == 1:
            self.proc.kill()
            self.proc.communicate(timeout=30)
            self.start()
            return
        before = workers_of(self.proc.pid)
        assert len(before) == 2
        os.kill(before[0], signal.SIGKILL)
        served = 0.0
        rounds = 0
        # Until the respawned worker is up and has itself answered the probes (connections go to whichever
        # worker accepts first, so keep asking; every answer on the way is checked as well).
        while True:
            now = [pid for pid in workers_of(self.proc.pid) if pid not in before]
            if now:
                served = served_by(self.metrics_dir, now[0], self.tmp / f"alone-{now[0]}-{rounds}")
                if served >= len(PROBES):
                    return
            rounds += 1
            assert rounds < 400, f"the respawned worker never answered: {now}"
            self.probe_once()  # every request made while waiting is checked too

    def probe_once(self) -> None:
        self.checked.append(self.probe(PROBES[len(self.checked) % len(PROBES)]))

    checked: list[int]

    def probe(self, sql: str) -> int:
        assert self.proc is not None
        try:
            response = httpx.post(self.base + SQL_ENDPOINT, json={"database": "demo", "sql": sql}, timeout=60)
        except httpx.TimeoutException as exc:
            raise AssertionError(f"no answer to {sql!r}; the server's log ends:\n{self.proc.log_text()[-4000:]}") from exc
        for value in self.salaries:
            assert value not in response.text, (sql, response.status_code, response.text[:300])
        assert response.status_code != 200, (sql, response.text[:300])
        assert response.status_code < 500 or response.json()["code"] == "rules_unavailable", response.text
        return response.status_code

    salaries: set[str]

    def probe_all(self, times: int = 3) -> list[int]:
        return [self.probe(sql) for _ in range(times) for sql in PROBES]

    def stop(self) -> str:
        if self.proc is None:
            return ""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = self.proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, stderr = self.proc.communicate(timeout=30)
        return stderr or ""


def workers_of(pid: int) -> list[int]:
    return sorted(c.pid for c in psutil.Process(pid).children() if "spawn_main" in " ".join(c.cmdline()))


def served_by(metrics_dir: Path, pid: int, scratch: Path) -> float:
    """Requests to /v1/sql that one worker answered (its own metrics file, collected alone)."""
    scratch.mkdir(parents=True, exist_ok=True)
    for file in metrics_dir.glob(f"counter_{pid}.db"):
        shutil.copy(file, scratch / file.name)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(scratch))
    return sum(s.value for f in registry.collect() for s in f.samples
               if s.name == "nl2sql_requests_total" and s.labels.get("endpoint") == SQL_ENDPOINT)


@pytest.fixture
def server(tmp_path: Path, demo_admin_dsn: str, salaries: set[str],
           request: pytest.FixtureRequest) -> Iterator[Callable[..., Server]]:
    made: list[Server] = []

    def make(workers: int, extra: dict[str, str] | None = None) -> Server:
        srv = Server(tmp_path, demo_admin_dsn, workers, extra)
        srv.salaries = salaries
        srv.checked = []
        srv.rules.mkdir()
        shutil.copy(shipped_dir("rules") / "demo.yaml", srv.rules / "demo.yaml")
        made.append(srv)
        return srv

    yield make
    for srv in made:
        srv.stop()


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_broken_after_a_good_start_serves_the_saved_rules_after_a_kill(
        server: Callable[..., Server], form: str, workers: int) -> None:
    srv = server(workers)
    srv.start()
    assert set(srv.probe_all(1)) <= {422}  # the check refuses each probe: the rules are in force
    FORMS[form](srv.rules)
    assert set(srv.probe_all()) <= {422}  # the live process keeps its rules
    srv.kill()  # a fresh process (or a respawned worker) starts from the saved last good set
    assert set(srv.probe_all()) <= {422} and set(srv.checked) <= {422}
    ready = httpx.get(srv.base + "/readyz", timeout=30)
    assert ready.status_code == 200, ready.text  # serving the last good set is safe; the body says so
    for _ in range(workers * 4):  # whichever worker answers
        body = httpx.get(srv.base + "/readyz", timeout=30).json()
        if "rules" in body:
            assert "last good rules stay in force" in body["rules"]["demo"]
            assert "salary" not in str(body) and str(srv.rules) not in str(body)
            break
    else:
        pytest.fail(f"/readyz never said the last good rules are in force: {body}")
    # questions reach the rules too: a fixed file is served again without a restart
    if srv.rules.exists() and (srv.rules / "demo.yaml").is_dir():
        (srv.rules / "demo.yaml").rmdir()
    srv.rules.mkdir(exist_ok=True)
    (srv.rules / "demo.yaml").unlink(missing_ok=True)
    shutil.copy(shipped_dir("rules") / "demo.yaml", srv.rules / "demo.yaml")
    assert set(srv.probe_all(1)) <= {422}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_broken_from_the_first_start_is_not_served(server: Callable[..., Server], form: str, workers: int) -> None:
    # A missing file or folder is "no rules" for a database that never had any, unless it requires rules.
    extra = {"NL2SQL_DATABASES__DEMO__RULES": "required"} if form in ("missing", "folder_missing") else {}
    srv = server(workers, extra)
    FORMS[form](srv.rules)
    srv.start()
    assert set(srv.probe_all()) == {503}
    response = httpx.post(srv.base + SQL_ENDPOINT, json={"database": "demo", "sql": "SELECT 1 AS one"}, timeout=30)
    assert response.status_code == 503 and response.json()["code"] == "rules_unavailable", response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    schema = httpx.get(srv.base + "/v1/databases/demo/schema", timeout=30)
    assert schema.status_code == 503 and "salary" not in schema.text
    ready = httpx.get(srv.base + "/readyz", timeout=30)
    assert ready.status_code == 503 and "not served" in ready.json()["rules"]["demo"], ready.text
    assert str(srv.rules) not in ready.text
    srv.kill()
    assert set(srv.probe_all()) == {503} and set(srv.checked) <= {503}
