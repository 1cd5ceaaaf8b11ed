"""The candidates scenario: EX, fixed and broken against a single generation, with calls and tokens.

Five questions on the demo database; the scripted model answers each prompt variant of each question in a
known way, so the right numbers are known in advance. The first candidate (the plain prompt) is what a
single generation answers.

=======  ======================  =====================  ====================  ======  =====  ==========
id       plain (= single)        plan                   divide                single  c3     oracle
=======  ======================  =====================  ====================  ======  =====  ==========
agree    right                   right (other SQL)      right                 right   right  right
fixed    wrong rows              right                  right                 wrong   FIXED  right
broken   right                   wrong rows X           wrong rows X          right   BROKE  right
tie      wrong rows A            right                  wrong rows B          wrong   wrong  right
error    execution error         right                  right                 wrong   FIXED  right
=======  ======================  =====================  ====================  ======  =====  ==========
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import ScenarioError, ask_policy, matrix, parse_scenario
from gateway.eval.session import run_session
from gateway.pipeline import prompts
from gateway.settings import AskPolicy
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.eval.helpers import eval_settings, is_generation, sql, write_questions

# id: (question, gold, {variant: SQL})
Q: dict[str, tuple[str, str, dict[str, str]]] = {
    "agree": ("How many customers are there?", "SELECT count(*) FROM customers",
              {"plain": "SELECT count(*) FROM customers", "plan": "SELECT count(customer_id) FROM customers",
               "divide": "SELECT count(*) AS n FROM customers c"}),
    "fixed": ("How many products are there?", "SELECT count(*) FROM products",
              {"plain": "SELECT count(*) FROM products WHERE is_discontinued",
               "plan": "SELECT count(*) FROM products", "divide": "SELECT count(product_id) FROM products"}),
    "broken": ("How many orders are there?", "SELECT count(*) FROM orders",
               {"plain": "SELECT count(*) FROM orders",
                "plan": "SELECT count(*) FROM orders WHERE status = 'shipped'",
                "divide": "SELECT count(order_id) FROM orders WHERE status = 'shipped'"}),
    "tie": ("How many sales regions are there?", "SELECT count(*) FROM regions",
            {"plain": "SELECT count(*) FROM regions WHERE code = 'WEU'", "plan": "SELECT count(*) FROM regions",
             "divide": "SELECT count(*) * 2 FROM regions"}),
    "error": ("How many product categories are there?", "SELECT count(*) FROM categories",
              {"plain": "SELECT count(*) FROM categoriez", "plan": "SELECT count(*) FROM categories",
               "divide": "SELECT count(category_id) FROM categories"}),
}


def variant_of(request: LLMRequest) -> str:
    return next((name for name, text in prompts.CANDIDATE_STRATEGIES.items() if text in request.last_user), "plain")


def script(llm: ScriptedLLM) -> None:
    by_length = sorted(Q, key=lambda qid: len(Q[qid][0]), reverse=True)

    def rule(request: LLMRequest) -> str | None:
        qid = next((qid for qid in by_length if Q[qid][0] in request.text), None)
        if qid is None or not is_generation(request):
            return None
        return sql(Q[qid][2][variant_of(request)])

    llm.add(rule)


def test_candidate_scenarios_are_named_parsed_and_applied() -> None:
    names = [s.name for s in matrix(["first_pass", "suspicious"], ["none"], ["1", "c5", 5])]
    assert names == ["first_pass/none", "first_pass/none/c5", "suspicious/none", "suspicious/none/c5"]
    assert parse_scenario("first_pass/none/c1") == parse_scenario("first_pass/none")
    for wrong in ("first_pass/none/c0", "first_pass/none/c17", "first_pass/none/x"):
        with pytest.raises(ScenarioError):
            parse_scenario(wrong)
    # the scenario's number replaces the database's, so that a run compares like with like
    assert ask_policy(AskPolicy(candidates=4), parse_scenario("first_pass/none")).candidates == 1
    assert ask_policy(AskPolicy(), parse_scenario("suspicious/none/c5")).candidates == 5


@pytest.fixture
async def report(demo_dsn: str, llm: ScriptedLLM, guidelines_dir: Path, tmp_path: Path) -> dict[str, Any]:
    script(llm)
    path = write_questions(tmp_path / "candidates.jsonl", [
        {"id": qid, "question": text, "database": "demo", "gold_sql": gold} for qid, (text, gold, _) in Q.items()])
    questions = load_questions(path)
    scenarios = matrix(["first_pass"], ["none"], [1, 3])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "c", {
        "questions_file": str(path), "questions_digest": "x", "question_count": len(questions),
        "scenarios": [s.name for s in scenarios], "model": "scripted-model"})
    out = io.StringIO()
    status = await run_session(eval_settings(demo_dsn, llm.base_url, guidelines_dir), folder, questions, scenarios,
                               concurrency=3, progress=False, collect=False, out=out)
    assert status == 0, out.getvalue()
    data: dict[str, Any] = json.loads((folder.report_dir / "report.json").read_text())
    data["markdown"] = (folder.report_dir / "report.md").read_text()
    data["table"] = out.getvalue()
    return data


async def test_candidates_are_scored_against_the_single_generation_of_the_same_request(
        report: dict[str, Any]) -> None:
    single, chosen = report["scenarios"]
    assert (single["name"], chosen["name"]) == ("first_pass/none", "first_pass/none/c3")
    assert single["candidates"] == 1 and "oracle_ex" not in single
    assert single["correct"] == 2 and single["fixed"] == single["broken"] == 0
    assert chosen["candidates"] == 3
    assert chosen["correct"] == 3 and chosen["ex"] == 0.6
    assert chosen["first_pass_correct"] == single["correct"]  # the first candidate is the single generation
    assert chosen["fixed_ids"] == ["error", "fixed"] and chosen["broken_ids"] == ["broken"]
    assert chosen["oracle_correct"] == 5 and chosen["oracle_ex"] == 1.0
    assert chosen["selections"].get("tie_first") == 1 and chosen["selections"].get("none_passed") is None


async def test_the_candidates_scenario_reports_calls_and_tokens(report: dict[str, Any]) -> None:
    single, chosen = report["scenarios"]
    # cancelled candidates were sent, so they count as calls; no reflection in first_pass
    assert single["llm_calls_per_question"] == 1.0 and chosen["llm_calls_per_question"] == 3.0
    assert chosen["tokens_per_question"] > 2 * single["tokens_per_question"]
    assert "## Candidates against a single generation" in report["markdown"]
    assert "first_pass/none/c3" in report["table"] and "calls/q" in report["table"]
