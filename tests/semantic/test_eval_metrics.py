"""``eval`` on the shipped metric question set (gateway/eval/questions/demo_metrics.jsonl, made from
gateway/semantic/data/demo_metric_questions.yaml): EX per question and per metric, every answer compiled."""

from __future__ import annotations

import io
import json
from pathlib import Path

import yaml

from gateway.eval.questions import load_questions, shipped
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.semantic.prompts import PICK_SYSTEM
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.eval.helpers import eval_settings

ROOT = Path(__file__).resolve().parents[2]
SOURCE = yaml.safe_load((ROOT / "gateway" / "semantic" / "data" / "demo_metric_questions.yaml").read_text())
QUESTIONS = load_questions(shipped("demo_metrics"))


def test_the_shipped_set_is_the_metric_questions() -> None:
    assert [q.id for q in QUESTIONS] == [f"metric-{item['id']}" for item in SOURCE]
    assert [q.gold_sql[0] for q in QUESTIONS] == [" ".join(item["sql"].split()) for item in SOURCE]
    assert [q.category for q in QUESTIONS] == [item["query"]["metrics"][0] for item in SOURCE]


async def test_eval_reports_ex_per_metric_question(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    picks = {item["question"]: item["query"] for item in SOURCE}
    ordered = sorted(picks, key=len, reverse=True)

    def pick(request: LLMRequest) -> str | None:
        if request.system != PICK_SYSTEM:
            return None
        question = next(q for q in ordered if f"Question: {q}" in request.last_user)
        return json.dumps({"metric_query": picks[question]})

    llm.add(pick)
    scenarios = matrix(["first_pass"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "metrics", {
        "questions_file": "demo_metrics", "questions_digest": "x", "question_count": len(QUESTIONS),
        "scenarios": [s.name for s in scenarios], "model": "scripted-model"})
    settings = eval_settings(demo_dsn, llm.base_url, ROOT / "guidelines")
    settings.semantic_dir = ROOT / "semantic"
    settings.rules_state_dir = tmp_path / "state"  # the last good models, never in the checkout
    assert await run_session(settings, folder, QUESTIONS, scenarios, concurrency=4, progress=False, collect=False,
                             out=io.StringIO()) == 0
    report = json.loads((folder.report_dir / "report.json").read_text())
    (first,) = report["scenarios"]
    assert first["n"] == first["correct"] == len(QUESTIONS) >= 30 and not report["gold_errors"]
    metrics = {item["query"]["metrics"][0] for item in SOURCE}
    assert set(first["by_category"]) == metrics
    assert all(c["correct"] == c["n"] for c in first["by_category"].values()), first["by_category"]
    assert not [r for r in llm.requests if r.system != PICK_SYSTEM]  # no SQL generation: all compiled
