"""The question set shipped for the demo database: its gold SQL runs, and the whole set evaluates end to end."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import asyncpg
import sqlglot
from sqlglot import exp

from gateway import safety
from gateway.eval.questions import load_questions, shipped
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.rules import RulesRegistry
from gateway.testing.scripted_llm import ScriptedLLM
from tests.eval.helpers import answer_by_question, eval_settings

REPO_RULES = Path(__file__).resolve().parents[2] / "rules"
QUESTIONS = load_questions(shipped("demo"))
# Questions the script answers wrongly at first (a misspelt table), then right on reflection.
FIXED_BY_REFLECTION = ("demo-e04", "demo-m03", "demo-m10", "demo-h02", "demo-h12")


def test_the_set_is_large_and_spans_difficulties() -> None:
    assert len(QUESTIONS) >= 40
    counts = Counter(q.category for q in QUESTIONS)
    assert set(counts) == {"easy", "medium", "hard"} and min(counts.values()) >= 10
    assert {q.database for q in QUESTIONS} == {"demo"}
    assert len({q.question for q in QUESTIONS}) == len(QUESTIONS)


async def test_every_gold_sql_runs_on_the_demo_database_and_returns_rows(demo_dsn: str) -> None:
    conn = await asyncpg.connect(demo_dsn)  # the read-only role the gateway uses
    try:
        for q in QUESTIONS:
            for sql in q.gold_sql:
                rows = await conn.fetch(sql)
                assert rows, f"{q.id}: gold returned no rows: {sql}"
                for probe, n in tie_probes(sql):
                    # ORDER BY ... LIMIT n must not cut between rows that tie on the sort key: the answer
                    # would then depend on the plan, and a right prediction could score wrong
                    found = [tuple(v for k, v in row.items() if k.startswith("tie_k")) for row in await conn.fetch(probe)]
                    assert len(found) <= n or found[n - 1] != found[n], (q.id, probe)
    finally:
        await conn.close()


def tie_probes(sql: str) -> list[tuple[str, int]]:
    """For each SELECT ... ORDER BY ... LIMIT n in ``sql``: a query for its first n + 1 sort keys, and n."""
    probes = []
    for select in sqlglot.parse_one(sql, read="postgres").find_all(exp.Select):
        limit, order = select.args.get("limit"), select.args.get("order")
        if limit is None or order is None:
            continue
        n = int(limit.expression.name)
        aliases = {e.alias: e.this for e in select.expressions if isinstance(e, exp.Alias)}
        keys = []
        for i, ordered in enumerate(order.expressions):
            key = ordered.this
            if isinstance(key, exp.Column) and not key.table and key.name in aliases:
                key = aliases[key.name]  # a projection cannot refer to another projection's alias
            keys.append(exp.alias_(key.copy(), f"tie_k{i}"))
        # Keys are appended, so ordinals in GROUP BY / ORDER BY keep their meaning.
        probe = select.copy().select(*keys, append=True)
        probe.set("limit", None)
        probes.append((probe.limit(n + 1).sql(dialect="postgres"), n))
    return probes


async def test_tie_probes_catch_a_tie_at_the_limit(demo_dsn: str) -> None:
    # 'desk lamp' and 'office chair' were each searched 207 times: a "top 3" would cut between them
    tied = ("SELECT q FROM (SELECT payload ->> 'query' AS q, count(*) AS n FROM events WHERE event_type = 'search' "
            "GROUP BY 1 ORDER BY n DESC LIMIT 3) s")
    (probe, n), = tie_probes(tied)
    conn = await asyncpg.connect(demo_dsn)
    try:
        found = [tuple(v for k, v in row.items() if k.startswith("tie_k")) for row in await conn.fetch(probe)]
    finally:
        await conn.close()
    assert found[n - 1] == found[n]


def test_tie_probes_see_limits_in_subqueries() -> None:
    (probe, n), = tie_probes("SELECT q FROM (SELECT x AS q, count(*) AS c FROM t GROUP BY x ORDER BY c DESC LIMIT 5) s")
    assert n == 5
    assert probe == "SELECT x AS q, COUNT(*) AS c, COUNT(*) AS tie_k0 FROM t GROUP BY x ORDER BY c DESC LIMIT 6"


def test_every_gold_sql_passes_the_safety_check_under_the_shipped_demo_rules() -> None:
    # A perfect model could write each gold: nothing in it is blocked or hidden by the demo's rules.
    policy = RulesRegistry(REPO_RULES).policy_for("demo", safety.Policy())
    assert "customers.email" in policy.hidden_columns
    for q in QUESTIONS:
        for sql in q.gold_sql:
            verdict = safety.check(sql, policy)
            assert verdict.allowed, (q.id, verdict.codes)


async def test_the_shipped_set_evaluates_end_to_end(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    broken = {q.id: q.gold_sql[0].replace(" FROM ", " FROM nope_", 1) for q in QUESTIONS if q.id in FIXED_BY_REFLECTION}
    answer_by_question(llm, {q.question: (broken.get(q.id, q.gold_sql[0]), q.gold_sql[0]) for q in QUESTIONS})
    scenarios = matrix(["first_pass", "suspicious"], ["none", "default"])[::3]  # first_pass/none, suspicious/default
    scenarios += matrix(["gold_first"], ["none"])
    assert [s.name for s in scenarios] == ["first_pass/none", "suspicious/default", "gold_first/none"]
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "demo", {
        "questions_file": "demo", "questions_digest": "x", "question_count": len(QUESTIONS),
        "scenarios": [s.name for s in scenarios], "model": "scripted-model"})
    # The repository's own rules and default guideline, as a DBA evaluating the demo would have them.
    settings = eval_settings(demo_dsn, llm.base_url, REPO_RULES.parent / "guidelines", rules_dir=REPO_RULES)
    out = io.StringIO()
    assert await run_session(settings, folder, QUESTIONS, scenarios, concurrency=6, progress=False, collect=False,
                             out=out) == 0
    report = json.loads((folder.report_dir / "report.json").read_text())
    first, suspicious, gold_first = report["scenarios"]
    n = len(QUESTIONS)
    assert first["n"] == suspicious["n"] == n and not report["gold_errors"]
    assert first["correct"] == n - len(FIXED_BY_REFLECTION) and first["fixed"] == first["broken"] == 0
    assert suspicious["correct"] == n and suspicious["first_pass_correct"] == n - len(FIXED_BY_REFLECTION)
    assert suspicious["fixed_ids"] == sorted(FIXED_BY_REFLECTION) and suspicious["broken"] == 0
    assert set(first["by_category"]) == {"easy", "medium", "hard"}
    # Validation's false alarms: no right answer on the shipped set is reflected on or left suspicious
    # (the bar is at most 1%), whether the gold comes first or the model's right answer does.
    assert gold_first["correct"] == gold_first["first_pass_correct"] == n
    assert gold_first["false_alarms"]["rate"] == suspicious["false_alarms"]["rate"] == 0.0
    assert gold_first["status_counts"] == {"ok": n}
    codes = {c["code"]: c for c in report["findings"]["codes"]}
    assert codes["(any)"]["on_correct"] == 0, codes
    assert codes["(any)"]["on_incorrect"] == codes["(any)"]["fired"] == len(FIXED_BY_REFLECTION), codes
