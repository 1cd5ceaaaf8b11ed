"""``--collect-corrections``: every wrong answer becomes a correction (wrong SQL, gold SQL) in the real store."""

from __future__ import annotations

import io
from pathlib import Path

from gateway.eval.questions import load_questions
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.settings import StoreSettings
from gateway.store import Store
from gateway.store import corrections as stored
from gateway.testing.scripted_llm import ScriptedLLM
from tests.eval.helpers import eval_settings
from tests.eval.test_scenarios import Q, gold, question_file, script


async def test_failures_become_corrections_once(demo_admin_dsn: str, fresh_db: str, llm: ScriptedLLM,
                                                guidelines_dir: Path, tmp_path: Path) -> None:
    demo_dsn = demo_admin_dsn  # the questions read customers.email, which the demo reader is not granted
    script(llm)
    path = question_file(tmp_path)
    questions = load_questions(path)
    scenarios = matrix(["first_pass", "suspicious"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "train1", {
        "questions_file": str(path), "questions_digest": "x", "question_count": len(questions),
        "scenarios": [s.name for s in scenarios]})
    settings = eval_settings(demo_dsn, llm.base_url, guidelines_dir, store_dsn=fresh_db)
    out = io.StringIO()
    assert await run_session(settings, folder, questions, scenarios, concurrency=4, progress=False, collect=True,
                             out=out) == 0
    # first_pass wrong: error, empty, never, extra; suspicious wrong: broken (new SQL), never and extra (the same
    # wrong SQL as in first_pass: stored once)
    assert "corrections stored: 5 (already stored earlier: 0, same SQL in another scenario: 2" in out.getvalue()

    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        rows = await stored.pending(store.pool, verified_only=True, limit=100)
        by_question = {}
        for row in rows:
            by_question.setdefault(row.question, []).append(row)
        texts = {qid: Q[qid][0] for qid in Q}
        assert sorted(by_question) == sorted(texts[q] for q in ("error", "empty", "broken", "never", "extra"))
        for qid in ("error", "empty", "never", "extra"):
            (row,) = by_question[texts[qid]]
            assert row.incorrect_sql == Q[qid][1]  # the first (generated) SQL
            assert row.corrected_sql == gold(qid)
            assert row.source == "dba" and row.verified and row.database == "demo"
            assert row.request_id == f"eval:train1:{qid}"
        (broken,) = by_question[texts["broken"]]
        assert broken.incorrect_sql == Q["broken"][2]  # the reflection's wrong SQL, which was the final answer
        assert broken.corrected_sql == gold("broken")

        # The same command again: the run is complete and nothing is stored twice.
        out = io.StringIO()
        folder, _ = RunFolder.create_or_resume(folder.path, folder.manifest())
        assert await run_session(settings, folder, questions, scenarios, concurrency=4, progress=False,
                                 collect=True, out=out) == 0
        assert "corrections stored: 0 (already stored earlier: 5" in out.getvalue()
        assert len(await stored.pending(store.pool, verified_only=True, limit=100)) == 5
    finally:
        await store.close()


async def test_collecting_needs_a_store(demo_dsn: str, llm: ScriptedLLM, guidelines_dir: Path,
                                        tmp_path: Path) -> None:
    path = question_file(tmp_path)
    questions = load_questions(path)
    scenarios = matrix(["first_pass"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "r", {"questions_digest": "x",
                                                                     "scenarios": ["first_pass/none"]})
    status = await run_session(eval_settings(demo_dsn, llm.base_url, guidelines_dir), folder, questions, scenarios,
                               concurrency=1, progress=False, collect=True, out=io.StringIO())
    assert status == 2
    assert llm.requests == []  # refused before asking anything


async def test_an_evaluation_leaves_no_trace_in_the_store(demo_admin_dsn: str, fresh_db: str, llm: ScriptedLLM,
                                                         guidelines_dir: Path, tmp_path: Path) -> None:
    """Answers go through Gateway.trial: not audited, no correction handed over, in no conversation and on no
    token budget, even with a store configured (only --collect-corrections writes, and only corrections)."""
    script(llm)
    path = question_file(tmp_path)
    questions = load_questions(path)
    scenarios = matrix(["first_pass", "gold_first"], ["none"])
    folder, _ = RunFolder.create_or_resume(tmp_path / "runs" / "quiet", {
        "questions_file": str(path), "questions_digest": "x", "question_count": len(questions),
        "scenarios": [s.name for s in scenarios]})
    settings = eval_settings(demo_admin_dsn, llm.base_url, guidelines_dir, store_dsn=fresh_db)
    assert await run_session(settings, folder, questions, scenarios, concurrency=2, progress=False, collect=False,
                             out=io.StringIO()) == 0
    assert len(folder.results()) == 2 * len(questions)
    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        for table in ("request_audit", "corrections", "conversations", "conversation_turns", "token_usage"):
            assert await store.pool.fetchval(f"SELECT count(*) FROM {table}") == 0, table
    finally:
        await store.close()
