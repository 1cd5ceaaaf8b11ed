"""`eval` checks its database, LLM and question file before the first question, and fails loudly when
nothing was scored."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import NOTHING_SCORED, run_session
from gateway.testing.scripted_llm import ScriptedLLM
from tests.eval.helpers import answer_by_question, eval_settings
from tests.serving import free_port

ENV = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "OPENAI_"))}


def eval_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", "eval", *args, "--no-progress"], cwd=cwd,
                          env={**ENV, **env}, capture_output=True, text=True, timeout=120)


def test_eval_with_nothing_configured_says_what_is_missing_before_any_question(tmp_path: Path) -> None:
    result = eval_cli(["demo", "--limit", "2"], tmp_path, {})
    assert result.returncode == 2
    assert "database 'demo', which is not configured" in result.stderr
    assert "nl2sql-gateway demo" in result.stderr  # how to get one
    assert result.stdout == ""  # no table of dashes


def test_eval_without_an_llm_or_with_one_that_does_not_answer(demo_dsn: str, tmp_path: Path) -> None:
    database = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn}
    no_llm = eval_cli(["demo", "--limit", "2"], tmp_path, {**database, "NL2SQL_LLM__MODEL": "m"})
    assert no_llm.returncode == 2 and "no LLM endpoint configured" in no_llm.stderr
    no_model = eval_cli(["demo", "--limit", "2"], tmp_path, {**database, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert no_model.returncode == 2 and "NL2SQL_LLM__MODEL" in no_model.stderr
    down = eval_cli(["demo", "--limit", "2"], tmp_path, {
        **database, "NL2SQL_LLM__MODEL": "m", "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"})
    assert down.returncode == 2 and "does not answer" in down.stderr
    assert not list((tmp_path / "eval-runs").glob("*/results*"))


def test_eval_with_an_empty_question_file(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    result = eval_cli([str(empty)], tmp_path, {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn,
                                               "OPENAI_BASE_URL": llm.base_url, "NL2SQL_LLM__MODEL": "m"})
    assert result.returncode == 2 and "empty" in result.stderr


async def test_a_run_that_scored_nothing_exits_non_zero(demo_dsn: str, llm: ScriptedLLM, guidelines_dir: Path,
                                                        tmp_path: Path) -> None:
    path = tmp_path / "broken-gold.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": "How many unicorns?", "database": "demo",
                                "gold_sql": "SELECT count(*) FROM unicorns"}) + "\n")
    answer_by_question(llm, {"How many unicorns?": ("SELECT 1", None)})
    questions = load_questions(path)
    scenarios = matrix(["first_pass"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "run", {
        "questions_file": str(path), "questions_digest": "x", "question_count": 1,
        "scenarios": [s.name for s in scenarios]})
    out = io.StringIO()
    status = await run_session(eval_settings(demo_dsn, llm.base_url, guidelines_dir), folder, questions, scenarios,
                               concurrency=1, progress=False, collect=False, out=out)
    assert status == NOTHING_SCORED == 1


def test_a_preflight_that_fails_leaves_no_run_folder(demo_dsn: str, tmp_path: Path) -> None:
    for env in ({}, {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LLM__MODEL": "m"}):  # no database; no LLM
        result = eval_cli(["demo", "--limit", "2"], tmp_path, env)
        assert result.returncode == 2 and "cannot start" in result.stderr, result.stderr
        assert "starting run" not in result.stderr
        assert not (tmp_path / "eval-runs").exists() or not list((tmp_path / "eval-runs").iterdir())


async def test_the_terminal_says_which_questions_were_dropped_and_why(demo_dsn: str, llm: ScriptedLLM,
                                                                     guidelines_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "one-broken.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in [
        {"id": "ok", "question": "How many regions?", "database": "demo", "gold_sql": "SELECT count(*) FROM regions"},
        {"id": "broken", "question": "How many unicorns?", "database": "demo",
         "gold_sql": "SELECT count(*) FROM unicorns"}]) + "\n")
    answer_by_question(llm, {"How many regions?": ("SELECT count(*) FROM regions", None),
                             "How many unicorns?": ("SELECT 1", None)})
    scenarios = matrix(["first_pass"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "run", {
        "questions_file": str(path), "questions_digest": "x", "question_count": 2,
        "scenarios": [s.name for s in scenarios]})
    out = io.StringIO()
    status = await run_session(eval_settings(demo_dsn, llm.base_url, guidelines_dir), folder, load_questions(path),
                               scenarios, concurrency=1, progress=False, collect=False, out=out)
    assert status == 0
    text = out.getvalue()
    assert "1 question left out of the scores (its gold SQL failed):" in text
    dropped = [line for line in text.splitlines() if line.strip().startswith("broken:")]
    assert len(dropped) == 1 and "unicorns" in dropped[0] and "does not exist" in dropped[0], text
