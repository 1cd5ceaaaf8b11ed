"""Question files, scenario names and the ask policy each scenario stands for."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

from gateway.eval import scenarios as scenarios_module
from gateway.eval.questions import QuestionSetError, load_questions, shipped
from gateway.eval.scenarios import ScenarioError, ask_policy, matrix, parse_scenario
from gateway.settings import AskPolicy


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text(text)
    return path


def test_doctests_pass() -> None:
    assert doctest.testmod(scenarios_module).failed == 0


def test_alternatives_evidence_and_category_are_read(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "question": "Q?", "database": "demo", "gold_sql": ["SELECT 1", "SELECT 1.0"],'
                           ' "evidence": "E", "category": "easy"}\n\n{"id": "b", "question": "R?", "database": "demo",'
                           ' "gold_sql": "SELECT 2"}\n')
    a, b = load_questions(path)
    assert a.gold_sql == ("SELECT 1", "SELECT 1.0") and a.evidence == "E" and a.category == "easy"
    assert b.gold_sql == ("SELECT 2",) and b.evidence is None and b.category is None


@pytest.mark.parametrize(("text", "message"), [
    ('{"id": "a", "question": "Q", "database": "demo", "gold_sql": "S"}\nnot json\n', r"q.jsonl:2: not JSON"),
    ('{"id": "a", "question": "Q", "database": "demo"}\n', r":1: 'gold_sql' must be"),
    ('{"id": "a", "question": "Q", "database": "demo", "gold_sql": []}\n', r"'gold_sql' must be"),
    ('{"id": "a", "question": "", "database": "demo", "gold_sql": "S"}\n', r"'question' must be"),
    ('{"id": "a", "question": "Q", "database": "demo", "gold_sql": "S", "gold": "x"}\n', r"unknown keys \['gold'\]"),
    ('{"id": "a", "question": "Q", "database": "demo", "gold_sql": "S"}\n'
     '{"id": "a", "question": "R", "database": "demo", "gold_sql": "S"}\n', r":2: id 'a' already used on line 1"),
    ('\n', r"no questions"),
    ('[1, 2]\n', r"expected a JSON object"),
])
def test_bad_question_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(QuestionSetError, match=message):
        load_questions(write(tmp_path, text))


def test_shipped_sets_are_found_by_name() -> None:
    assert shipped("demo").name == "demo.jsonl"
    with pytest.raises(QuestionSetError):
        shipped("nope")


def test_scenario_names() -> None:
    assert parse_scenario("errors/V7").guideline == "v7"
    assert parse_scenario("all").name == "all/none"
    assert parse_scenario("suspicious/v3").guideline_version == 3
    assert parse_scenario("suspicious/v3").baseline.name == "first_pass/v3"
    for bad in ("sometimes/none", "errors/latest", "errors/v0", "errors/v-1"):
        with pytest.raises(ScenarioError):
            parse_scenario(bad)
    assert [s.name for s in matrix(["errors", "errors"], ["none", "none"])] == ["errors/none"]


def test_each_scenario_sets_the_loop_policy_and_keeps_the_rest() -> None:
    base = AskPolicy(model="m", temperature=0.3, max_iterations=4, time_budget_s=12.0,
                     reflect_on=frozenset({"empty_result", "null_heavy"}), llm_judge=True)
    first = ask_policy(base, parse_scenario("first_pass/none"))
    assert first.max_iterations == 0
    errors_only = ask_policy(base, parse_scenario("errors/none"))
    assert errors_only.reflect_on == frozenset() and errors_only.guideline_scenario == "errors_only"
    assert errors_only.max_iterations == 4
    suspicious = ask_policy(base, parse_scenario("suspicious/default"))
    assert suspicious.reflect_on == {"empty_result", "null_heavy"} and suspicious.guideline_scenario == "suspicious"
    assert ask_policy(base, parse_scenario("all/v2")).guideline_scenario == "all"
    for policy in (first, errors_only, suspicious):
        assert (policy.model, policy.temperature, policy.time_budget_s, policy.llm_judge) == ("m", 0.3, 12.0, True)
    # a database configured without reflection still gets reflection in the reflection scenarios
    assert ask_policy(AskPolicy(max_iterations=0), parse_scenario("errors/none")).max_iterations == 3
