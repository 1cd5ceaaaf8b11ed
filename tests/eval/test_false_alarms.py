"""False alarms of validation on right answers (tests/eval/data/false_alarms.jsonl), each of a class measured
on a held-out benchmark: a ranking read as a count, two counts asked together, "the number of" inside a
ratio, "by" naming the agent rather than a grouping, and a count that really is 0. With a model that answers
the reference SQL every time, every answer must end ``ok`` with the reference's result.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.pipeline.validate import Shape, shape_of
from gateway.testing.gold_llm import answer_gold
from gateway.testing.scripted_llm import ScriptedLLM
from tests.eval.helpers import eval_settings, is_reflection

DATA = Path(__file__).parent / "data" / "false_alarms.jsonl"
# What the result checks used to say about each class. Now count_mismatch is silent on SQL that aggregates,
# grouping_mismatch is an advisory wording guess, and empty_aggregate a doubt the model's re-statement upholds.
FLAGGED_BY = {"count_ranking": "count_mismatch", "count_pair": "count_mismatch", "count_ratio": "count_mismatch",
              "grouping_agent": "grouping_mismatch", "empty_true_zero": "empty_aggregate"}


async def test_right_answers_flagged_by_wording_guesses_or_true_zeros_all_end_ok(
        demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    questions = load_questions(DATA)
    assert len(questions) >= 20 and {q.category for q in questions} == set(FLAGGED_BY)
    # the wording reads as the old checks read it: one count asked, or a grouping
    for q in questions:
        if FLAGGED_BY[q.category or ""] == "count_mismatch":
            assert shape_of(q.question) == Shape(count=True, grouped=False), q.id
        elif FLAGGED_BY[q.category or ""] == "grouping_mismatch":
            assert shape_of(q.question).grouped, q.id
    answer_gold(llm, questions)
    (scenario,) = [s for s in matrix(["suspicious"], ["none"])]  # the default reflect_on
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "fa", {
        "questions_file": "false_alarms", "questions_digest": "x", "question_count": len(questions),
        "scenarios": [scenario.name], "model": "scripted-model"})
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines")
    assert await run_session(settings, folder, questions, [scenario], concurrency=3, progress=False,
                             collect=False, out=io.StringIO()) == 0
    report = json.loads((folder.report_dir / "report.json").read_text())
    (result,) = report["scenarios"]
    assert result["correct"] == result["first_pass_correct"] == len(questions)
    assert result["status_counts"] == {"ok": len(questions)}
    fired = {c["code"]: c["fired"] for c in report["findings"]["codes"]}
    expected = Counter(FLAGGED_BY[q.category or ""] for q in questions)
    assert expected["count_mismatch"] >= 12 and fired["count_mismatch"] == 0  # the SQL counted: silent
    # the wording guess and the true zeros are still flagged (shown in the answer) ...
    assert fired["grouping_mismatch"] == expected["grouping_mismatch"] and fired["empty_aggregate"] >= 4
    # ... but only the true zeros were reflected on (empty_aggregate is not a guess from words), and the model's
    # re-statement upheld them; the wording guesses are advisory.
    reflected = [r for r in llm.requests if is_reflection(r)]
    zeros = [q for q in questions if q.category == "empty_true_zero"]
    assert len(reflected) == len(zeros)
    assert all(any(q.question in r.text for q in zeros) for r in reflected)
