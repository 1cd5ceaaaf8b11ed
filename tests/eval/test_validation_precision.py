"""Validation precision, measured: right answers are not flagged, and each finding code's precision/recall.

The set below holds right answers that the old result checks flagged (a ranking "with the highest number
of", "for each month" over data that holds one month, a projection that repeats values, a column the data
leaves mostly NULL), and one wrong answer that used to pass: a count over a filter that matched nothing.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.testing.gold_llm import answer_gold
from gateway.testing.scripted_llm import ScriptedLLM
from tests.eval.helpers import answer_by_question, eval_settings, is_generation, is_reflection, write_questions

RIGHT = {
    "ranking": ("List the top 3 products with the highest number of units sold.",
                "SELECT p.name FROM order_items oi JOIN products p ON p.product_id = oi.product_id "
                "GROUP BY p.name ORDER BY sum(oi.quantity) DESC LIMIT 3"),
    "one_month": ("What was the revenue for each month, over orders placed from 2024-12-24 on?",
                  "SELECT date_trunc('month', ordered_at) AS month, sum(total_amount) AS revenue FROM orders "
                  "WHERE ordered_at >= '2024-12-24' GROUP BY 1"),
    "repeats": ("List the countries of the customers in the Enterprise segment.",
                "SELECT country FROM customers WHERE segment = 'Enterprise'"),
    "nulls": ("List the discount code of each web order placed from 2024-12-30 on.",
              "SELECT discount_code FROM orders WHERE channel = 'web' AND ordered_at >= '2024-12-30'"),
}
ZERO = ("How many orders were cancelled in 2024?",
        "SELECT count(*) FROM orders WHERE status = 'Cancelled' AND ordered_at >= '2024-01-01' "
        "AND ordered_at < '2025-01-01'",
        "SELECT count(*) FROM orders WHERE status = 'cancelled' AND ordered_at >= '2024-01-01' "
        "AND ordered_at < '2025-01-01'")


def question_file(tmp_path: Path) -> Path:
    rows = [{"id": qid, "question": text, "database": "demo", "gold_sql": gold} for qid, (text, gold) in RIGHT.items()]
    rows.append({"id": "zero", "question": ZERO[0], "database": "demo", "gold_sql": ZERO[2]})
    return write_questions(tmp_path / "precision.jsonl", rows)


async def run(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path, scenarios: list[str]) -> dict:
    questions = load_questions(question_file(tmp_path))
    chosen = [s for s in matrix(["first_pass", "errors", "suspicious", "all", "gold_first"], ["none"])
              if s.name in scenarios]
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "p", {
        "questions_file": "precision", "questions_digest": "x", "question_count": len(questions),
        "scenarios": [s.name for s in chosen], "model": "scripted-model"})
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines")
    out = io.StringIO()
    assert await run_session(settings, folder, questions, chosen, concurrency=3, progress=False, collect=False,
                             out=out) == 0
    report = json.loads((folder.report_dir / "report.json").read_text())
    report["_terminal"] = out.getvalue()
    report["_markdown"] = (folder.report_dir / "report.md").read_text()
    return report


async def test_gold_first_right_answers_are_neither_reflected_on_nor_suspicious(
        demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    # The model is never asked to generate under gold_first; if asked to reflect, it would repeat the gold.
    answer_gold(llm, load_questions(question_file(tmp_path)))
    report = await run(demo_dsn, llm, tmp_path, ["gold_first/none"])
    (scenario,) = report["scenarios"]
    right = len(RIGHT) + 1  # the gold of "zero" is right too (a count that is not 0)
    assert scenario["correct"] == scenario["first_pass_correct"] == right
    assert scenario["false_alarms"] == {"right_first": right, "reflected": 0, "suspicious": 0,
                                        "reflected_or_suspicious": 0, "rate": 0.0, "ids": []}
    assert scenario["status_counts"] == {"ok": right}
    assert not any(is_generation(r) or is_reflection(r) for r in llm.requests)
    assert report["findings"]["attempts"] == right and report["findings"]["incorrect"] == 0
    assert all(c["fired"] == 0 for c in report["findings"]["codes"])
    assert "## Validation precision" in report["_markdown"] and "(no finding fired)" in report["_terminal"]


async def test_an_aggregate_over_no_matching_rows_is_reflected_and_counted_per_code(
        demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    script = {text: (gold, None) for text, gold in RIGHT.values()}
    script[ZERO[0]] = (ZERO[1], ZERO[2])  # 'Cancelled' matches nothing; the reflection spells it as stored
    answer_by_question(llm, script)
    report = await run(demo_dsn, llm, tmp_path, ["first_pass/none", "suspicious/none"])
    first, suspicious = report["scenarios"]
    assert first["correct"] == len(RIGHT) and suspicious["correct"] == len(RIGHT) + 1
    assert suspicious["fixed_ids"] == ["zero"] and suspicious["broken"] == 0
    zero = next(r for r in llm.requests if is_reflection(r))
    assert "empty_aggregate" in zero.last_user and ZERO[0] in zero.last_user
    # The right answers were never reflected on in either scenario.
    assert first["false_alarms"]["rate"] == suspicious["false_alarms"]["rate"] == 0.0
    assert len([r for r in llm.requests if is_reflection(r)]) == 1
    codes = {c["code"]: c for c in report["findings"]["codes"]}
    # distinct attempts: 5 first attempts (the same in both scenarios) and the one reflection
    assert (report["findings"]["attempts"], report["findings"]["incorrect"]) == (6, 1)
    assert codes["empty_aggregate"] == {"code": "empty_aggregate", "fired": 1, "on_correct": 0, "on_incorrect": 1,
                                        "precision": 1.0, "recall": 1.0}
    for code in ("count_mismatch", "grouping_mismatch", "duplicate_rows", "null_heavy"):
        assert codes[code]["fired"] == 0, code
    assert "| empty_aggregate | 1 | 0 | 1 | 100.0% | 100.0% |" in report["_markdown"]


def test_a_guideline_review_of_a_passing_answer_is_not_a_false_alarm() -> None:
    from gateway.eval.report import false_alarms

    def record(qid: str, passed_first: bool, attempts: int, status: str) -> dict:
        return {"id": qid, "first_correct": True, "attempts": attempts, "status": status,
                "trace": [{"passed": passed_first}] + [{"passed": True}] * (attempts - 1)}

    alarms = false_alarms([record("reviewed", True, 2, "ok"), record("flagged", False, 2, "ok"),
                           record("left", True, 1, "suspicious"), record("quiet", True, 1, "ok"),
                           {"id": "wrong", "first_correct": False, "attempts": 3, "status": "suspicious"}])
    assert alarms == {"right_first": 4, "reflected": 1, "suspicious": 1, "reflected_or_suspicious": 2,
                      "rate": 0.5, "ids": ["flagged", "left"]}
