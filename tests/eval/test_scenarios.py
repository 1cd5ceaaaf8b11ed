"""Scenario accounting on a scripted set whose right numbers are known in advance.

Seven questions on the demo database, each scripted for a known path through the loop:

=====  ===========================  ==========================================  ===========  ======  ==========
id     first attempt                 reflection                                  first_pass   errors  suspicious
=====  ===========================  ==========================================  ===========  ======  ==========
right1 right                         (never asked)                               right        right   right
right2 right                         (never asked)                               right        right   right
error  execution error               fixes it                                    wrong        FIXED   FIXED
empty  wrong literal: empty result   fixes it (empty results are suspicious)     wrong        wrong   FIXED
broken right, but empty (gold is)    "fixes" the empty result into wrong rows    right        right   BROKEN
never  wrong, nothing suspicious     (never asked)                               wrong        wrong   wrong
extra  right rows + an extra column  (never asked)                               wrong/EX+    same    same
=====  ===========================  ==========================================  ===========  ======  ==========
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.testing.scripted_llm import ScriptedLLM
from tests.eval.helpers import (
    GUIDELINE_MARKER,
    answer_by_question,
    eval_settings,
    is_reflection,
    write_questions,
)

Q = {
    "right1": ("How many customers are there?", "SELECT count(*) FROM customers", None, None),
    "right2": ("List the names of all sales regions.", "SELECT name FROM regions", None, None),
    "error": ("How many orders were cancelled?", "SELECT count(*) FROM orderz WHERE status = 'cancelled'",
              "SELECT count(*) AS cancelled FROM orders WHERE status = 'cancelled'",
              "SELECT count(*) FROM orders WHERE status = 'cancelled'"),
    "empty": ("What is the name of the region with code WEU?", "SELECT name FROM regions WHERE code = 'weu'",
              "SELECT name FROM regions WHERE code = 'WEU'", "SELECT name FROM regions WHERE code = 'WEU'"),
    "broken": ("Which customers signed up in 2030? Give their emails.",
               "SELECT email FROM customers WHERE signup_date >= '2030-01-01'",
               "SELECT email FROM customers WHERE signup_date >= '2023-01-01' ORDER BY email LIMIT 3",
               "SELECT email FROM customers WHERE signup_date >= '2030-01-01'"),
    "never": ("What is the average list price of all products?", "SELECT max(list_price) FROM products", None,
              "SELECT avg(list_price) FROM products"),
    "extra": ("What is the name of the product with the highest list price?",
              "SELECT name, list_price FROM products ORDER BY list_price DESC LIMIT 1", None,
              "SELECT name FROM products ORDER BY list_price DESC LIMIT 1"),
}


def gold(qid: str) -> str:
    _text, generated, _reflected, gold_sql = Q[qid]
    return gold_sql or generated


def script(llm: ScriptedLLM) -> None:
    answer_by_question(llm, {text: (generated, reflected) for text, generated, reflected, _ in Q.values()})


def question_file(tmp_path: Path) -> Path:
    return write_questions(tmp_path / "scripted.jsonl", [
        {"id": qid, "question": text, "database": "demo", "gold_sql": gold(qid),
         "category": "hard" if qid in ("empty", "broken") else "easy"}
        for qid, (text, *_rest) in Q.items()
    ])


EXPECTED = {
    # scenario: (strict correct, extra-columns correct, first-pass correct, fixed, broken, attempts)
    "first_pass": (["broken", "right1", "right2"], 4, 3, [], [], 7),
    "errors": (["broken", "error", "right1", "right2"], 5, 3, ["error"], [], 8),
    "suspicious": (["empty", "error", "right1", "right2"], 5, 3, ["empty", "error"], ["broken"], 10),
}


@pytest.fixture
async def run(demo_admin_dsn: str, llm: ScriptedLLM, guidelines_dir: Path, tmp_path: Path) -> dict:
    demo_dsn = demo_admin_dsn  # the questions read customers.email, which the demo reader is not granted
    script(llm)
    path = question_file(tmp_path)
    questions = load_questions(path)
    scenarios = matrix(["first_pass", "errors", "suspicious"], ["none", "default"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "r1", {
        "questions_file": str(path), "questions_digest": "x", "question_count": len(questions),
        "scenarios": [s.name for s in scenarios], "model": "scripted-model"})
    out = io.StringIO()
    status = await run_session(eval_settings(demo_dsn, llm.base_url, guidelines_dir), folder, questions, scenarios,
                               concurrency=4, progress=False, collect=False, out=out)
    assert status == 0, out.getvalue()
    report = json.loads((folder.report_dir / "report.json").read_text())
    return {"report": report, "folder": folder, "out": out.getvalue()}


async def test_ex_fixed_and_broken_are_exact_per_scenario(run: dict) -> None:
    report = run["report"]
    assert [s["name"] for s in report["scenarios"]] == [
        "first_pass/none", "first_pass/default", "errors/none", "errors/default", "suspicious/none",
        "suspicious/default"]
    for s in report["scenarios"]:
        right, extra, first, fixed, broken, attempts = EXPECTED[s["reflection"]]
        assert s["n"] == 7
        assert s["correct"] == len(right), s["name"]
        assert s["ex"] == round(len(right) / 7, 4)
        assert s["correct_extra"] == extra, s["name"]  # "extra" is right only when extra columns are allowed
        assert s["first_pass_correct"] == first, s["name"]
        assert s["fixed_ids"] == fixed and s["fixed"] == len(fixed), s["name"]
        assert s["broken_ids"] == broken and s["broken"] == len(broken), s["name"]
        assert s["attempts_per_question"] == round(attempts / 7, 3), s["name"]
        assert s["llm_calls_per_question"] == round(attempts / 7, 3)
        assert s["tokens_per_question"] > 0 and s["latency_ms_p50"] > 0
        assert s["latency_ms_p95"] >= s["latency_ms_p50"]
    per_question = {q["id"]: q["outcomes"] for q in report["per_question"]}
    for reflection, (right, *_rest) in EXPECTED.items():
        for guideline in ("none", "default"):
            name = f"{reflection}/{guideline}"
            assert sorted(q for q, o in per_question.items() if o[name]["correct"]) == right, name


async def test_per_category_and_database(run: dict) -> None:
    suspicious = next(s for s in run["report"]["scenarios"] if s["name"] == "suspicious/none")
    # hard: empty (fixed, right) and broken (wrong); easy: right1, right2, error right; never, extra wrong
    assert suspicious["by_category"]["hard"] == {"n": 2, "correct": 1, "correct_extra": 1, "ex": 0.5,
                                                 "ex_extra": 0.5, "correct_defog": 1, "ex_defog": 0.5,
                                                 "correct_bird": 1, "ex_bird": 0.5}
    assert suspicious["by_category"]["easy"]["correct"] == 3 and suspicious["by_category"]["easy"]["n"] == 5
    assert suspicious["by_database"]["demo"]["n"] == 7


async def test_guideline_reaches_exactly_the_reflections_of_its_scenarios(run: dict, llm: ScriptedLLM) -> None:
    reflections = [r for r in llm.requests if is_reflection(r)]
    # errors: 1 reflection (error) per guideline; suspicious: 3 (error, empty, broken) per guideline
    assert len(reflections) == 2 * (1 + 3)
    with_guideline = [r for r in reflections if GUIDELINE_MARKER in r.text]
    assert len(with_guideline) == 1 + 3
    assert not any(GUIDELINE_MARKER in r.text for r in llm.requests if not is_reflection(r))


async def test_reports_are_written(run: dict) -> None:
    folder: RunFolder = run["folder"]
    names = {p.name for p in folder.report_dir.iterdir()}
    assert {"report.json", "report.md", "ex_per_scenario.png", "fixed_vs_broken.png", "cost_per_question.png"} <= names
    for png in ("ex_per_scenario.png", "fixed_vs_broken.png", "cost_per_question.png"):
        assert (folder.report_dir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (folder.report_dir / "report.md").read_text()
    assert "| suspicious/none | 57.1% | 71.4% | 42.9% | 2 | 1 |" in markdown
    assert "| suspicious/none | empty, error | broken |" in markdown
    assert "suspicious/default" in run["out"] and "57.1%" in run["out"]
    # the recorded results keep each answer's trace for later analysis
    record = next(r for r in folder.results() if r["scenario"] == "suspicious/none" and r["id"] == "broken")
    assert [a["source"] for a in record["trace"]] == ["generation", "reflection"]
    assert record["first_correct"] and not record["correct"]
