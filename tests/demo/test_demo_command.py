"""`nl2sql-gateway demo` as a user runs it: it says where its database and config are, and every other
command reaches the running demo through that config."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.serving import LoggedProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "OPENAI_"))}


def cli(args: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def running_demo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    if os.environ.get("NL2SQL_TEST_ADMIN_DSN"):
        pytest.skip("starts its own embedded server")
    data = tmp_path_factory.mktemp("demo") / "pgdata"
    port = free_port()
    cwd = tmp_path_factory.mktemp("cwd")
    proc = LoggedProcess([sys.executable, "-m", "gateway", "demo", "--data-dir", str(data), "--port", str(port)],
                         log=cwd / "demo.log", env=ENV, cwd=cwd, stdout=subprocess.PIPE)
    banner = ""
    deadline = time.monotonic() + 240
    assert proc.stdout is not None
    while "export NL2SQL_CONFIG=" not in banner or "Try:" not in banner:
        line = proc.stdout.readline()
        if not line or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the demo did not start: {banner} {proc.log_text()}")
        banner += line
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    try:
        yield banner, base, port, proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_demo_prints_its_dsn_and_config_that_other_commands_use(running_demo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    banner, _, _, _ = running_demo
    dsn = re.search(r"Demo database: (postgresql://\S+)", banner)
    config = re.search(r"export NL2SQL_CONFIG=(\S+)", banner)
    assert dsn and config, banner
    assert "nl2sql_reader@" in dsn.group(1)
    env = {**ENV, "NL2SQL_CONFIG": config.group(1)}
    schema = cli(["schema", "demo"], env, tmp_path)  # from another directory than the demo's
    assert schema.returncode == 0, schema.stderr
    assert {"orders", "regions"} <= {t["name"] for t in json.loads(schema.stdout)["tables"]}
    check = cli(["check", "--database", "demo"], env, tmp_path, "SELECT email FROM customers")
    assert check.returncode == 1 and json.loads(check.stdout)["codes"] == ["hidden_column"]
    key = cli(["keys", "create", "--name", "newcomer", "--role", "client", "--databases", "demo"], env, tmp_path)
    assert key.returncode == 0, key.stderr
    assert key.stdout.strip().startswith("nl2sql_")
    listed = cli(["keys", "list", "--json"], env, tmp_path)
    assert "newcomer" in listed.stdout


def test_demo_on_a_busy_port_says_so_before_claiming_to_serve(running_demo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, _, port, _ = running_demo
    result = cli(["demo", "--data-dir", str(tmp_path / "pg"), "--port", str(port)], ENV, tmp_path)
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "serving" not in result.stdout and "starting embedded Postgres" not in result.stdout


def test_demo_answers_a_shipped_question_offline(running_demo) -> None:  # type: ignore[no-untyped-def]
    _, base, _, _ = running_demo
    answer = httpx.post(base + "/v1/ask", json={"database": "demo",
                                                "question": "How many orders were placed per region?"}, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["stop_reason"] == "verified_example"


def test_a_question_the_demo_cannot_answer_offline_says_what_works(running_demo) -> None:  # type: ignore[no-untyped-def]
    _, base, _, _ = running_demo
    answer = httpx.post(base + "/v1/ask", json={"database": "demo", "question": "Which product sells best?"},
                        timeout=60)
    assert answer.status_code == 503
    problem = answer.json()
    assert problem["code"] == "llm_not_configured"
    shipped = [json.loads(line)["question"] for line in
               (ROOT / "gateway" / "demo" / "examples.jsonl").read_text().splitlines() if line.strip()]
    assert problem["verified_questions"] == shipped
    assert "How many orders were placed per region?" in problem["detail"]
    assert "NL2SQL_LLM__MODEL" in problem["detail"] and "nl2sql-gateway demo" in problem["detail"]


def test_the_readme_ask_example_works_offline(running_demo) -> None:  # type: ignore[no-untyped-def]
    _, base, _, _ = running_demo
    readme = (ROOT / "README.md").read_text()
    question = re.search(r"""curl -s localhost:8000/v1/ask .*?"question": "([^"]+)"\}'""", readme, re.S)
    assert question, "the README's /v1/ask example is gone"
    answer = httpx.post(base + "/v1/ask", json={"database": "demo", "question": question.group(1)}, timeout=60)
    assert answer.status_code == 200, answer.text


def test_a_second_demo_on_the_same_data_directory_refuses_and_leaves_the_first_serving(running_demo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    banner, base, port, pid = running_demo
    data_dir = re.search(r"Postgres data: (\S+)", banner)
    assert data_dir, banner
    other_port = free_port()
    second = subprocess.Popen([sys.executable, "-m", "gateway", "demo", "--data-dir", data_dir.group(1),
                               "--port", str(other_port)], env=ENV, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        out, err = second.communicate(timeout=120)  # it refuses at once; an adopting one would serve on
    except subprocess.TimeoutExpired:
        second.send_signal(signal.SIGINT)  # stop it as a user would: with the old demo this stopped Postgres
        out, err = second.communicate(timeout=120)
    assert second.returncode == 2, (out, err)
    assert f"another nl2sql-gateway demo (pid {pid}, http://127.0.0.1:{port}) is already running on {data_dir.group(1)}" in err
    assert "starting embedded Postgres" not in out
    # The first demo's database is untouched: it still runs SQL.
    answer = httpx.post(base + "/v1/sql", json={"database": "demo", "sql": "SELECT count(*) AS n FROM orders"},
                        timeout=60)
    assert answer.status_code == 200, answer.text
