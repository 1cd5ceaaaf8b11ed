"""Regenerate the sample evaluation report in this folder (``docs/evaluation.md`` links it).

The LLM is the scripted test server playing a model with typical mistakes, so the report shows every part
of the report (fixed, broken, extra columns, errors) without a real endpoint; its numbers say nothing about
any real model. Postgres: ``NL2SQL_SAMPLE_ADMIN_DSN`` (a superuser DSN) or a throwaway embedded server.

    python docs/evaluation-sample/generate.py
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from gateway.pipeline import prompts
from gateway.demo.embedded import EmbeddedPostgres
from gateway.demo.generator import ensure_demo_database
from gateway.eval.questions import load_questions, shipped
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import matrix
from gateway.eval.session import run_session
from gateway.settings import DatabaseSettings, LLMSettings, Settings
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# question id -> (first SQL, SQL after a reflection, SQL after a guideline review of a passing answer)
MISTAKES: dict[str, tuple[str, str | None, str | None]] = {
    # a misspelt table: any reflection fixes it
    "demo-e04": ("SELECT count(*) FROM product WHERE is_discontinued", None, None),
    "demo-m03": ("SELECT r.name, count(*) FROM customers c JOIN region r ON r.region_id = c.region_id GROUP BY r.name",
                 None, None),
    "demo-h09": ("SELECT c.name, sum(oi.quantity * oi.unit_price * (1 - oi.discount_pct) - oi.quantity * p.unit_cost) "
                 "FROM order_item oi JOIN orders o ON o.order_id = oi.order_id JOIN products p ON p.product_id = "
                 "oi.product_id JOIN categories c ON c.category_id = p.category_id WHERE o.status NOT IN ('cancelled', "
                 "'returned') AND o.ordered_at >= '2024-01-01' AND o.ordered_at < '2025-01-01' GROUP BY c.name",
                 None, None),
    # a wrong literal: the empty result is suspicious, so only reflection on suspicious results fixes it
    "demo-e14": ("SELECT name FROM categories WHERE department = 'electronics'", None, None),
    "demo-m13": ("SELECT DISTINCT p.brand FROM products p JOIN categories c ON c.category_id = p.category_id "
                 "WHERE c.name = 'audio'", None, None),
    "demo-h14": ("SELECT DISTINCT p.name FROM products p JOIN order_items oi ON oi.product_id = p.product_id JOIN "
                 "orders o ON o.order_id = oi.order_id WHERE p.is_discontinued AND o.ordered_at >= '2025-01-01'",
                 None, None),
    # helpful extra columns: right for a person, wrong for strict EX
    "demo-e05": ("SELECT name, list_price FROM products ORDER BY list_price DESC LIMIT 1", "=", None),
    "demo-m09": ("SELECT method, count(*) AS failed FROM payments WHERE status = 'failed' GROUP BY method "
                 "ORDER BY failed DESC LIMIT 1", "=", None),
    # plausible and wrong, nothing suspicious: never reflected, never right
    "demo-m05": ("SELECT count(*) FROM customers WHERE NOT is_active", "=", None),
    "demo-h05": ("SELECT count(*) FROM (SELECT customer_id FROM orders GROUP BY customer_id "
                 "HAVING sum(total_amount) > 1000) big", "=", None),
    "demo-h10": ("SELECT count(*) FROM (SELECT customer_id FROM orders WHERE ordered_at < '2024-01-01' UNION "
                 "SELECT customer_id FROM orders WHERE ordered_at >= '2024-01-01') both_years", "=", None),
    # an error the model cannot fix: it repeats itself
    "demo-h07": ("WITH team AS (SELECT employee_id FROM employees WHERE manager_id = 2 UNION ALL SELECT e.employee_id "
                 "FROM employees e JOIN team t ON e.manager_id = t.employee_id) SELECT count(*) FROM team", "=", None),
}
# right first, talked out of it when asked to review a passing answer against the guideline
REVIEW_BREAKS = {
    "demo-h01": "SELECT r.name, sum(o.total_amount) AS revenue FROM orders o JOIN customers c ON c.customer_id = "
                "o.customer_id JOIN regions r ON r.region_id = c.region_id WHERE o.ordered_at >= '2024-01-01' AND "
                "o.ordered_at < '2025-01-01' GROUP BY r.name ORDER BY revenue DESC",
    "demo-e13": "SELECT round(avg(list_price), 1) FROM products",
}


def _delay(key: str) -> float:
    return 0.15 + (int(hashlib.md5(key.encode()).hexdigest()[:4], 16) % 1000) / 2000  # 0.15 .. 0.65 s


def simulated_model(llm: ScriptedLLM) -> None:
    questions = load_questions(shipped("demo"))
    by_text = sorted(((q.question, q) for q in questions), key=lambda item: len(item[0]), reverse=True)
    review_advice = prompts.FINDING_ADVICE["guideline_review"]

    def rule(request: LLMRequest) -> Reply | None:
        q = next((q for text, q in by_text if text in request.text), None)
        if q is None:
            return None
        gold = q.gold_sql[0]
        first, fixed, _ = MISTAKES.get(q.id, (gold, None, None))
        if request.system == prompts.GENERATE_SYSTEM:
            sql = first
        elif review_advice in request.text:
            sql = REVIEW_BREAKS.get(q.id, first if fixed == "=" else gold)
        else:
            sql = first if fixed == "=" else (fixed or gold)
        return Reply(content=f"<thinking>...</thinking>\n<sql>{sql}</sql>", delay_s=_delay(q.id + request.system[:20]))

    llm.add(rule)


async def main() -> None:
    admin = os.environ.get("NL2SQL_SAMPLE_ADMIN_DSN")
    server = None
    if admin is None:
        server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="nl2sql-sample-")), durable=False)
        server.start()
        admin = server.admin_dsn
    work = Path(tempfile.mkdtemp(prefix="nl2sql-sample-run-"))
    try:
        reader = await ensure_demo_database(admin)
        with ScriptedLLM(model="simulated-model") as llm:
            simulated_model(llm)
            settings = Settings(
                databases={"demo": DatabaseSettings(dsn=reader)},
                llm=LLMSettings(base_url=llm.base_url, model="simulated-model (scripted test server)"),
                rules_dir=ROOT / "rules", guidelines_dir=ROOT / "guidelines",
            )
            questions = load_questions(shipped("demo"))
            scenarios = matrix(["first_pass", "errors", "suspicious", "all"], ["none", "default"])
            folder, _ = RunFolder.create_or_resume(work / "sample", {
                "questions_file": "gateway/eval/questions/demo.jsonl", "questions_digest": "demo",
                "question_count": len(questions), "scenarios": [s.name for s in scenarios],
                "model": settings.llm.model, "llm_base_url": "http://127.0.0.1:<port>/v1", "concurrency": 8})
            status = await run_session(settings, folder, questions, scenarios, concurrency=8, progress=True,
                                       collect=False)
        for item in folder.report_dir.iterdir():
            shutil.copy(item, HERE / item.name)
        print(f"sample report written to {HERE} (status {status})", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.destroy()


if __name__ == "__main__":
    asyncio.run(main())
