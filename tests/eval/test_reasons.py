"""``eval`` says why each wrong answer is wrong (error, empty, missing rows or columns, wrong values, order), in
report.json, report.md and the terminal; ``eval compare`` lists each question right in A and wrong in B with
the reason and both SQLs."""

from __future__ import annotations

import doctest
import io
import json
from pathlib import Path

from gateway.eval import reasons, suspect
from gateway.eval.compare import compare_runs, render_comparison
from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.testing.scripted_llm import ScriptedLLM
from tests.eval.helpers import answer_by_question, eval_settings, write_questions

CASES = {  # id: (question, gold, wrong answer, reason)
    "err": ("How many regions are there?", "SELECT count(*) FROM regions", "SELECT count(*) FROM no_such_table",
            "error"),
    "empty": ("List the region codes.", "SELECT code FROM regions", "SELECT code FROM regions WHERE code = 'XX'",
              "empty"),
    "rows": ("List the codes of the European regions.", "SELECT code FROM regions WHERE name LIKE '%Europe'",
             "SELECT code FROM regions WHERE name = 'Western Europe'", "missing_rows"),
    "cols": ("List each region's code and name.", "SELECT code, name FROM regions", "SELECT code FROM regions",
             "missing_columns"),
    "values": ("How many product categories are there?", "SELECT count(*) FROM categories",
               "SELECT count(*) - 1 FROM categories", "wrong_values"),
    "order": ("List the region codes in alphabetical order.", "SELECT code FROM regions ORDER BY code",
              "SELECT code FROM regions ORDER BY code DESC", "order"),
}


def test_doctests() -> None:
    assert doctest.testmod(reasons).failed == 0 and doctest.testmod(suspect).failed == 0


async def _run(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path, name: str, wrong: bool) -> tuple[RunFolder, str]:
    path = write_questions(tmp_path / "q.jsonl", [{"id": k, "question": q, "database": "demo", "gold_sql": g}
                                                  for k, (q, g, _, _) in CASES.items()])
    questions = load_questions(path)
    llm.reset()
    answer_by_question(llm, {q: ((bad if wrong else g), None) for q, g, bad, _ in CASES.values()})
    (scenario,) = matrix(["suspicious"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / name, {
        "questions_file": "q", "questions_digest": "x", "question_count": len(questions),
        "scenarios": [scenario.name], "model": name})
    out = io.StringIO()
    settings = eval_settings(demo_dsn, llm.base_url, tmp_path / "guidelines")
    assert await run_session(settings, folder, questions, [scenario], concurrency=3, progress=False,
                             collect=False, out=out) == 0
    return folder, out.getvalue()


async def test_each_wrong_answer_carries_its_reason_and_compare_lists_the_regressions(
        demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    right, _ = await _run(demo_dsn, llm, tmp_path, "A", wrong=False)
    wrong, terminal = await _run(demo_dsn, llm, tmp_path, "B", wrong=True)
    report = json.loads((wrong.report_dir / "report.json").read_text())
    got = {q["id"]: next(iter(q["outcomes"].values()))["reason"] for q in report["per_question"]}
    assert got == {k: c[3] for k, c in CASES.items()}
    (scenario,) = report["scenarios"]
    assert scenario["reasons"] == {c[3]: 1 for c in CASES.values()}
    assert "wrong answers by reason:" in terminal and "missing_rows 1" in terminal
    markdown = (wrong.report_dir / "report.md").read_text()
    assert "## Wrong answers and why" in markdown and "| order | suspicious/none | order |" in markdown
    assert json.loads((right.report_dir / "report.json").read_text())["scenarios"][0]["reasons"] == {}
    diff = compare_runs(right, wrong)
    (s,) = diff["scenarios"]
    by_id = {r["id"]: r for r in s["regressions"]}
    assert set(by_id) == set(CASES)
    assert by_id["values"] == {"id": "values", "reason": "wrong_values", "before_sql": CASES["values"][1],
                               "after_sql": CASES["values"][2]}
    text = render_comparison(diff)
    assert "regressions (right in A, wrong in B), with the reason:" in text
    assert f"suspicious/none order: order\n    A: {CASES['order'][1]}\n    B: {CASES['order'][2]}" in text
