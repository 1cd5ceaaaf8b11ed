"""`eval` counts clarifying questions apart and scores them as not correct (a benchmark question has one answer)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.pipeline import prompts
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.eval.helpers import eval_settings, sql, write_questions

AMBIGUOUS = "What was revenue by region?"
CLEAR = "How many regions are there?"


def answer(request: LLMRequest) -> str | None:
    if request.system != prompts.GENERATE_SYSTEM:
        return None
    if AMBIGUOUS in request.last_user:
        return "<clarify><question>Customer region or sales rep region?</question></clarify>"
    return sql("SELECT count(*) FROM regions")


async def test_eval_reports_clarifications_apart_and_scores_them_not_correct(
    demo_dsn: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    llm.add(answer)
    guidelines = tmp_path / "guidelines"
    guidelines.mkdir()
    path = write_questions(tmp_path / "q.jsonl", [
        {"id": "ambiguous", "question": AMBIGUOUS, "database": "demo", "gold_sql": "SELECT count(*) FROM orders"},
        {"id": "clear", "question": CLEAR, "database": "demo", "gold_sql": "SELECT count(*) FROM regions"},
    ])
    questions = load_questions(path)
    scenarios = matrix(["first_pass"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "r1", {
        "questions_file": str(path), "questions_digest": "x", "question_count": len(questions),
        "scenarios": [s.name for s in scenarios], "model": "scripted-model"})
    out = io.StringIO()
    status = await run_session(eval_settings(demo_dsn, llm.base_url, guidelines), folder, questions, scenarios,
                               concurrency=2, progress=False, collect=False, out=out)
    assert status == 0, out.getvalue()
    report = json.loads((folder.report_dir / "report.json").read_text())
    markdown = (folder.report_dir / "report.md").read_text()
    (scenario,) = report["scenarios"]
    assert scenario["clarifications"] == 1 and scenario["clarification_rate"] == 0.5
    assert scenario["correct"] == 1 and scenario["ex"] == 0.5  # the clarification is not correct
    assert scenario["status_counts"] == {"needs_clarification": 1, "ok": 1}
    (record,) = [r for r in folder.results() if r["id"] == "ambiguous"]
    assert record["clarification"] == {"question": "Customer region or sales rep region?", "options": []}
    assert record["correct"] is False and record["sql"] is None
    assert "clarifications" in markdown
