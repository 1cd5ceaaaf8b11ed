"""``eval compare`` and ``eval report`` on stored runs (no LLM needed: results are written as a run would)."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

from gateway.eval import report as report_module
from gateway.eval.compare import compare_runs, render_comparison
from gateway.eval.runfolder import RunFolder


def result(scenario: str, qid: str, correct: bool, first: bool | None = None, tokens: int = 100,
           latency: float = 50.0) -> dict:
    return {"scenario": scenario, "id": qid, "database": "demo", "category": "easy", "status": "ok",
            "correct": correct, "correct_extra": correct, "first_correct": correct if first is None else first,
            "attempts": 1, "llm_calls": 1, "prompt_tokens": tokens, "completion_tokens": 10, "latency_ms": latency}


def make_run(path: Path, results: list[dict], model: str) -> RunFolder:
    folder, _ = RunFolder.create_or_resume(path, {"questions_file": "q.jsonl", "questions_digest": "d",
                                                  "question_count": 3, "model": model,
                                                  "scenarios": sorted({r["scenario"] for r in results})})
    for r in results:
        folder.append_result(r)
    return folder


def two_runs(tmp_path: Path) -> tuple[RunFolder, RunFolder]:
    a = make_run(tmp_path / "runs" / "A", [
        result("errors/none", "q1", True), result("errors/none", "q2", False), result("errors/none", "q3", True),
        result("errors/none", "q4", True),  # not in B: not compared
    ], "model-a")
    b = make_run(tmp_path / "runs" / "B", [
        result("errors/none", "q1", True), result("errors/none", "q2", True, first=False, tokens=300),
        result("errors/none", "q3", False, first=True),
    ], "model-b")
    return a, b


def test_report_doctests() -> None:
    assert doctest.testmod(report_module).failed == 0


def test_compare_counts_gains_losses_and_changes(tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    diff = compare_runs(a, b)
    assert diff["only_in_a"] == 1 and diff["only_in_b"] == 0 and diff["same_questions"]
    (s,) = diff["scenarios"]
    assert s["n"] == 3 and s["gained"] == ["q2"] and s["lost"] == ["q3"]
    assert (s["a"]["correct"], s["b"]["correct"]) == (2, 2)
    assert (s["b"]["fixed"], s["b"]["broken"]) == (1, 1)
    text = render_comparison(diff)
    assert "models: A model-a, B model-b" in text
    assert "66.7% → 66.7% (+0.0 pts)" in text
    assert "errors/none: +q2 -q3" in text
    assert "110 → 177 (+67)" in text  # tokens per question over the three compared questions


def test_compare_and_report_commands(tmp_path: Path) -> None:
    two_runs(tmp_path)
    cli = [sys.executable, "-m", "gateway", "eval"]
    compared = subprocess.run([*cli, "compare", "A", "B", "--runs-dir", str(tmp_path / "runs")],
                              capture_output=True, text=True, timeout=120)
    assert compared.returncode == 0, compared.stderr
    assert "comparing run A (A) with run B (B)" in compared.stdout and "+q2 -q3" in compared.stdout
    reported = subprocess.run([*cli, "report", str(tmp_path / "runs" / "B")], capture_output=True, text=True,
                              timeout=120)
    assert reported.returncode == 0, reported.stderr
    report_md = Path(reported.stdout.strip())
    assert report_md.is_file() and "| errors/none | 66.7% |" in report_md.read_text()
    assert (report_md.parent / "fixed_vs_broken.png").is_file()
    missing = subprocess.run([*cli, "compare", "A", "nope", "--runs-dir", str(tmp_path / "runs")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "nope: no run folder" in missing.stderr
