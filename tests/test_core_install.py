"""The core install, as production and the container image get it: the wheel without extras, in a fresh venv.

It serves (so an import of an optional package on the serving path fails here), and the two commands that
need an extra answer with a one-line hint and exit status 2: ``demo`` at once, ``eval`` after writing its
JSON and Markdown reports. The venv is built once for this module; pip takes the packages from its cache.
"""

from __future__ import annotations

import doctest
import json
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from gateway.cli import extras
from gateway.testing.scripted_llm import ScriptedLLM
from tests.install import build_wheel, new_venv, pip_install, site_packages
from tests.serving import start_serve

# Nothing of the checkout may leak into the installed package's processes.
CLEAN_ENV = {"PYTHONPATH": "", "NL2SQL_CONFIG": ""}


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh virtualenv holding the wheel installed without extras."""
    work = tmp_path_factory.mktemp("core-install")
    python = new_venv(work / "venv")
    pip_install(python, str(build_wheel(work)))
    warm_bytecode(python)
    return python


def warm_bytecode(python: Path) -> None:
    """Import the commands once with bytecode writing on, so that each process started later skips compiling."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | CLEAN_ENV
    subprocess.run([str(python), "-c", "import gateway.cli.main, gateway.api.app, gateway.eval.session"], env=env,
                   cwd=python.parent, check=True, capture_output=True, timeout=120)


def cli(core: Path) -> str:
    return str(core.parent / "nl2sql-gateway")


def run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(command, cwd=cwd, env={**os.environ, **CLEAN_ENV, **env}, capture_output=True, text=True,
                          timeout=120)


def test_extras_doctests() -> None:
    assert doctest.testmod(extras).failed == 0


def test_the_core_install_holds_no_optional_package(core: Path, tmp_path: Path) -> None:
    probe = ("import importlib.util, json, gateway; "
             "print(json.dumps({'gateway': gateway.__file__, 'found': [m for m in json.loads(input()) "
             "if importlib.util.find_spec(m) is not None]}))")
    optional = [m for modules in extras.EXTRAS.values() for m in modules] + ["numpy", "PIL", "fontTools"]
    serving = ["uvloop", "httptools", "pglast", "sqlglot", "asyncpg", "yaml"]
    done = subprocess.run([str(core), "-c", probe], input=json.dumps(optional + serving), cwd=tmp_path,
                          env={**CLEAN_ENV, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert Path(found["gateway"]).is_relative_to(site_packages(core))  # the installed wheel, not the checkout
    assert found["found"] == serving  # every optional package absent, everything serving needs present


def test_serve_from_the_core_install(core: Path, demo_dsn: str, tmp_path: Path) -> None:
    proc, base = start_serve({**CLEAN_ENV, "NL2SQL_DATABASES__DEMO__DSN": demo_dsn}, tmp_path, command=[cli(core)])
    try:
        ok = httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT name FROM regions ORDER BY 1"})
        blocked = httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT 1; DROP TABLE regions"})
        checked = httpx.post(base + "/v1/check", json={"sql": "SELECT pg_sleep(10)"})
        ready = httpx.get(base + "/readyz")
        metrics = httpx.get(base + "/metrics")
        console = [httpx.get(f"{base}/console/{name}") for name in ("", "app.js", "console.css")]  # in the wheel
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    assert ok.status_code == 200, ok.text
    assert ok.json()["rows"] and [c["name"] for c in ok.json()["columns"]] == ["name"]
    assert blocked.status_code == 422 and blocked.headers["content-type"].startswith("application/problem+json")
    assert checked.status_code == 200 and checked.json()["verdict"]["allowed"] is False
    assert ready.status_code == 200 and "nl2sql_requests_total" in metrics.text
    assert [r.status_code for r in console] == [200, 200, 200] and "app.js" in console[0].text
    assert proc.returncode in (0, -signal.SIGTERM), stderr
    assert "Traceback" not in stderr


def test_demo_without_its_extra_names_it(core: Path, tmp_path: Path) -> None:
    done = run([cli(core), "demo", "--data-dir", str(tmp_path / "pgdata")], tmp_path)
    assert done.returncode == 2
    assert done.stderr == "nl2sql-gateway demo needs the demo extra: pip install 'nl2sql-gateway[demo]'\n"
    assert not (tmp_path / "pgdata").exists()


def eval_hint() -> str:
    return ("nl2sql-gateway eval needs the eval extra for the PNG charts (report.json and report.md are written): "
            "pip install 'nl2sql-gateway[eval]'\n")


def test_eval_without_its_extra_writes_json_and_markdown_and_names_it(core: Path, demo_dsn: str, llm: ScriptedLLM,
                                                                       tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "How many regions are there?", "database": "demo",
                                     "gold_sql": "SELECT count(*) FROM regions", "category": "easy"}) + "\n")
    llm.add_reply("<sql>SELECT count(*) FROM regions</sql>")
    done = run([cli(core), "eval", str(questions), "--run-id", "r1", "--reflection", "first_pass",
                "--guideline", "none", "--no-progress"], tmp_path,
               NL2SQL_DATABASES__DEMO__DSN=demo_dsn, NL2SQL_LLM__BASE_URL=llm.base_url,
               NL2SQL_LLM__MODEL="scripted-model", OPENAI_API_KEY="test-key")
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(eval_hint()) and "Traceback" not in done.stderr
    report = tmp_path / "eval-runs" / "r1" / "report"
    assert sorted(p.name for p in report.iterdir()) == ["report.json", "report.md"]
    (scenario,) = json.loads((report / "report.json").read_text())["scenarios"]
    assert scenario["name"] == "first_pass/none" and scenario["correct"] == 1
    assert ".png" not in (report / "report.md").read_text()

    rebuilt = run([cli(core), "eval", "report", "r1"], tmp_path)
    assert rebuilt.returncode == 2 and rebuilt.stderr == eval_hint()
    assert rebuilt.stdout.strip() == str(Path("eval-runs") / "r1" / "report" / "report.md")
    assert sorted(p.name for p in report.iterdir()) == ["report.json", "report.md"]
