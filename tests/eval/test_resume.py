"""Resuming: an interrupted run keeps every finished result and a second run asks only for the rest."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gateway import errors
from gateway.eval import pipeline
from gateway.eval.questions import load_questions, shipped
from gateway.eval.runfolder import RunFolder, RunFolderError
from gateway.eval.runner import EvalStopped, run_eval
from gateway.eval.scenarios import matrix
from gateway.eval.session import STOPPED, run_session
from gateway.testing.scripted_llm import Reply, ScriptedLLM
from tests.eval.helpers import answer_by_question, eval_settings, is_generation, sql


def gold_script(llm: ScriptedLLM, questions, hold: threading.Event | None = None,  # type: ignore[no-untyped-def]
                held: frozenset[str] = frozenset()) -> None:
    """Answer each question with its gold SQL; those in ``held`` only once ``hold`` is set."""
    if hold is not None:
        answers = {q.question: q.gold_sql[0] for q in questions}
        ordered = sorted(answers, key=len, reverse=True)

        def script(request):  # type: ignore[no-untyped-def]
            question = next((q for q in ordered if q in request.text), None)
            if question is None:
                return None
            return Reply(content=sql(answers[question]), hold=hold if question in held else None)

        llm.add(script)
    else:
        answer_by_question(llm, {q.question: (q.gold_sql[0], None) for q in questions})


def manifest(questions, scenarios) -> dict:  # type: ignore[no-untyped-def]
    return {"questions_file": "demo", "questions_digest": "d1", "question_count": len(questions),
            "scenarios": [s.name for s in scenarios]}


async def test_an_interrupted_run_resumes_without_asking_twice(demo_dsn: str, llm: ScriptedLLM,
                                                               guidelines_dir: Path, tmp_path: Path) -> None:
    questions = load_questions(shipped("demo"))[:8]
    scenarios = matrix(["first_pass"], ["none"])
    gold_script(llm, questions)
    folder, resumed = RunFolder.create_or_resume(tmp_path / "run", manifest(questions, scenarios))
    assert not resumed
    settings = eval_settings(demo_dsn, llm.base_url, guidelines_dir)
    calls = 0

    async def failing_after_three(state, q, scenario, guideline):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls > 3:
            raise errors.LLMUnavailable("the endpoint went away")
        return await pipeline.answer(state, q, scenario, guideline)

    guidelines = {("demo", "none"): pipeline.NO_GUIDELINE}
    async with pipeline.open_gateway(settings) as state:
        with pytest.raises(EvalStopped, match="llm_unavailable"):
            await run_eval(state, folder, questions, scenarios, guidelines, failing_after_three, concurrency=1,
                           progress=False)
    # The infrastructure failure is not an answer: only the three finished pairs are recorded.
    assert sorted(r["id"] for r in folder.results()) == sorted(q.id for q in questions[:3])
    asked_before = sum(is_generation(r) for r in llm.requests)
    assert asked_before == 3

    folder, resumed = RunFolder.create_or_resume(tmp_path / "run", manifest(questions, scenarios))
    assert resumed
    out = io.StringIO()
    status = await run_session(settings, folder, questions, scenarios, concurrency=3, progress=False, collect=False,
                               out=out)
    assert status == 0
    assert sum(is_generation(r) for r in llm.requests) - asked_before == 5  # only the five left
    results = folder.results()
    assert sorted(r["id"] for r in results) == sorted(q.id for q in questions)
    lines = (folder.path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 8  # nothing recorded twice
    assert all(r["correct"] for r in results)


async def test_infrastructure_errors_stop_the_session_with_its_own_status(demo_dsn: str, guidelines_dir: Path,
                                                                          llm: ScriptedLLM, tmp_path: Path) -> None:
    questions = load_questions(shipped("demo"))[:2]
    scenarios = matrix(["first_pass"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "run", manifest(questions, scenarios))
    # The endpoint answers the pre-flight check, then fails every completion: the LLM is unavailable.
    llm.add(lambda request: Reply(status=503))
    settings = eval_settings(demo_dsn, llm.base_url, guidelines_dir)
    status = await run_session(settings, folder, questions, scenarios, concurrency=1, progress=False,
                               collect=False, out=io.StringIO())
    assert status == STOPPED
    assert folder.results() == []
    # An endpoint that does not answer at all is found before the first question: a set-up error.
    down = eval_settings(demo_dsn, "http://127.0.0.1:9/v1", guidelines_dir)
    assert await run_session(down, folder, questions, scenarios, concurrency=1, progress=False, collect=False,
                             out=io.StringIO()) == 2


def test_a_partial_last_line_is_cut_on_resume(tmp_path: Path) -> None:
    folder, _ = RunFolder.create_or_resume(tmp_path / "run", {"questions_digest": "d1", "scenarios": ["a/none"]})
    folder.append_result({"scenario": "a/none", "id": "q1", "correct": True})
    with (folder.path / "results.jsonl").open("a") as handle:
        handle.write('{"scenario": "a/none", "id": "q2", "corr')  # the process died mid-write
    assert [r["id"] for r in folder.results()] == ["q1"]
    folder, resumed = RunFolder.create_or_resume(tmp_path / "run", {"questions_digest": "d1",
                                                                    "scenarios": ["b/none"]})
    assert resumed and folder.manifest()["scenarios"] == ["a/none", "b/none"]
    folder.append_result({"scenario": "a/none", "id": "q2", "correct": False})
    assert sorted(r["id"] for r in folder.results()) == ["q1", "q2"]
    assert all(json.loads(line) for line in (folder.path / "results.jsonl").read_text().splitlines())


def test_a_run_id_cannot_be_reused_for_another_question_set(tmp_path: Path) -> None:
    RunFolder.create_or_resume(tmp_path / "run", {"questions_digest": "d1", "scenarios": []})
    with pytest.raises(RunFolderError, match="different question set"):
        RunFolder.create_or_resume(tmp_path / "run", {"questions_digest": "d2", "scenarios": []})


def test_ctrl_c_loses_no_finished_result(demo_dsn: str, llm: ScriptedLLM, guidelines_dir: Path,
                                         tmp_path: Path) -> None:
    """A real process, a real SIGINT in the middle of a run, then the same command again."""
    questions = load_questions(shipped("demo"))[:12]
    # The first three questions are answered at once, the others only after the SIGINT: the run is always
    # interrupted with some results finished and some not, however fast or slow the machine is.
    release = threading.Event()
    held = frozenset(q.question for q in questions[3:])
    gold_script(llm, questions, hold=release, held=held)
    env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LLM__BASE_URL": llm.base_url,
           "NL2SQL_LLM__MODEL": "scripted-model", "NL2SQL_LLM__MAX_RETRIES": "0",
           "NL2SQL_GUIDELINES_DIR": str(guidelines_dir), "NL2SQL_RULES_DIR": str(tmp_path / "no-rules")}
    env.pop("NL2SQL_CONFIG", None)
    command = [sys.executable, "-m", "gateway", "eval", "demo", "--limit", "12", "--reflection", "first_pass",
               "--guideline", "none", "--run-id", "r1", "--runs-dir", str(tmp_path / "runs"), "--concurrency", "2",
               "--no-progress"]
    results = tmp_path / "runs" / "r1" / "results.jsonl"
    process = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            finished = len(results.read_text().splitlines()) if results.is_file() else 0
            waiting = any(q in r.text for r in list(llm.requests) for q in held)
            if finished >= 3 and waiting:  # the fast ones are written and a held one is being asked
                break
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    finally:
        release.set()  # the held answers go to a client that is gone
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "resume with --run-id r1" in err
    first = [json.loads(line) for line in results.read_text().splitlines()]  # every line whole
    assert 3 <= len(first) < 12
    asked_before = sum(is_generation(r) for r in llm.requests)

    llm.reset()
    gold_script(llm, questions)
    again = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "resuming run r1" in again.stderr
    final = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(final) == 12 and len({r["id"] for r in final}) == 12
    assert final[: len(first)] == first  # finished results untouched
    assert sum(is_generation(r) for r in llm.requests) == 12 - len(first)
    assert asked_before >= len(first)
    assert "first_pass/none" in again.stdout and "100.0%" in again.stdout


async def test_an_evaluation_opens_the_gateway_even_when_access_control_is_on(demo_dsn: str, llm: ScriptedLLM,
                                                                              guidelines_dir: Path,
                                                                              tmp_path: Path) -> None:
    # Production settings keep API keys on (and then demand a store); an evaluation serves nothing over HTTP.
    questions = load_questions(shipped("demo"))[:1]
    scenarios = matrix(["first_pass"], ["none"])
    gold_script(llm, questions)
    settings = eval_settings(demo_dsn, llm.base_url, guidelines_dir)
    settings.auth.enabled = True
    settings.server.host = "0.0.0.0"
    folder, _ = RunFolder.create_or_resume(tmp_path / "run", manifest(questions, scenarios))
    assert await run_session(settings, folder, questions, scenarios, concurrency=1, progress=False, collect=False,
                             out=io.StringIO()) == 0
    assert [r["correct"] for r in folder.results()] == [True]
    assert settings.auth.enabled  # the caller's settings are left as they were
