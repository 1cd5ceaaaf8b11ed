"""Several candidates against a single generation, on the shipped demo question set, with a simulated model.

    python bench/candidates.py [--candidates 1 3 5] [--reflection first_pass suspicious] [--concurrency 8]

Starts an embedded PostgreSQL in a temporary directory with the demo database and a scripted
OpenAI-compatible LLM on loopback (reached over real HTTP through the openai SDK), then runs ``eval`` (the
same :func:`gateway.eval.session.run_session` the CLI runs) on ``gateway/eval/questions/demo.jsonl`` for every
reflection mode crossed with every number of candidates, and prints the terminal table and the report's
"candidates against a single generation" table.

The model is a stand-in, so the numbers show what the mechanism does with a model of known habits, not what
any real model gains. Every draw (a question and a prompt variant: the plain prompt, the query plan, the
sub-questions, the values first) is wrong with probability 0.25 by one of three near misses made from the
gold SQL with sqlglot (the outer WHERE forgotten, the sort order flipped, a misspelt table: an execution
error). On 15% of the questions the model has a blind spot: each draw is wrong with probability 0.7, and
always the same way, so its wrong candidates agree with each other. A reflection answers the gold SQL with
probability 0.6, else repeats the plain draw. Draws are deterministic (hashes of question and variant), so
two runs print the same EX, fixed, broken and oracle; tokens, agreement and the unanimous / largest_group
split move a little with which stragglers a majority cancels. Each call takes 50 to 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import ensure_demo_database  # noqa: E402
from gateway.eval.markdown import render_markdown  # noqa: E402
from gateway.eval.questions import Question, load_questions, shipped  # noqa: E402
from gateway.eval.runfolder import RunFolder  # noqa: E402
from gateway.eval.scenarios import matrix  # noqa: E402
from gateway.eval.session import run_session  # noqa: E402
from gateway.pipeline import prompts  # noqa: E402
from gateway.settings import DatabaseSettings, Limits, LLMSettings, Settings  # noqa: E402
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
P_WRONG, P_WRONG_BLIND_SPOT, P_BLIND_SPOT, P_REFLECTION_FIXES = 0.25, 0.7, 0.15, 0.6
MISTAKES = ("drop_where", "flip_order", "misspell_table")


def draw(*key: object) -> float:
    """A deterministic number in [0, 1) for ``key``."""
    digest = hashlib.sha256("|".join(map(str, key)).encode()).hexdigest()
    return int(digest[:8], 16) / 2**32


def near_miss(gold: str, kind: str) -> str | None:
    """The gold SQL with one typical mistake, or None when the mistake does not apply to it."""
    tree = sqlglot.parse_one(gold, read="postgres")
    if kind == "drop_where":
        if not tree.args.get("where"):
            return None
        tree.set("where", None)
    elif kind == "flip_order":
        order = tree.args.get("order")
        if order is None:
            return None
        for key in order.expressions:
            key.set("desc", not key.args.get("desc"))
    else:
        table = next(tree.find_all(exp.Table), None)
        if table is None:
            return None
        table.set("this", exp.to_identifier(table.name + "s"))
    return tree.sql(dialect="postgres")


def mistake(q: Question, variant: str) -> str | None:
    """The draw's SQL when it is wrong, None when it is right."""
    blind = draw(q.id, "blind") < P_BLIND_SPOT
    if draw(q.id, variant, "wrong") >= (P_WRONG_BLIND_SPOT if blind else P_WRONG):
        return None
    start = int(draw(q.id, "kind") * 3) if blind else int(draw(q.id, variant, "kind") * 3)
    for kind in MISTAKES[start:] + MISTAKES[:start]:
        wrong = near_miss(q.gold_sql[0], kind)
        if wrong is not None:
            return wrong
    return None


def variant_of(request: LLMRequest) -> str:
    return next((name for name, text in prompts.CANDIDATE_STRATEGIES.items() if text in request.last_user), "plain")


def simulated_model(llm: ScriptedLLM, questions: list[Question]) -> None:
    by_text = sorted(questions, key=lambda q: len(q.question), reverse=True)

    def rule(request: LLMRequest) -> Reply | None:
        q = next((q for q in by_text if q.question in request.text), None)
        if q is None:
            return None
        gold = q.gold_sql[0]
        if request.system == prompts.GENERATE_SYSTEM:
            variant = variant_of(request)
            sql = mistake(q, variant) or gold
        elif request.system == prompts.REFLECT_SYSTEM:
            rounds = request.last_user.count("### Attempt")
            fixes = draw(q.id, "reflect", rounds) < P_REFLECTION_FIXES
            sql = gold if fixes else (mistake(q, "plain") or gold)
            variant = f"reflect{rounds}"
        else:
            return None
        return Reply(f"<thinking>...</thinking>\n<sql>{sql}</sql>", delay_s=0.05 + 0.25 * draw(q.id, variant, "ms"))

    llm.add(rule)


def candidates_table(report: dict[str, Any]) -> str:
    markdown = render_markdown(report)
    start = markdown.find("## Candidates against a single generation")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:end].strip() + "\n" if start >= 0 else ""


async def main(args: argparse.Namespace) -> None:
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="nl2sql-candidates-")), durable=False)
    server.start()
    work = Path(tempfile.mkdtemp(prefix="nl2sql-candidates-run-"))
    try:
        reader = await ensure_demo_database(server.admin_dsn)
        questions = load_questions(shipped("demo"))
        with ScriptedLLM(model="simulated-model") as llm:
            simulated_model(llm, questions)
            settings = Settings(
                databases={"demo": DatabaseSettings(dsn=reader, limits=Limits(max_rows=1000))},
                llm=LLMSettings(base_url=llm.base_url, model="simulated-model", max_retries=0),
                rules_dir=ROOT / "rules", guidelines_dir=ROOT / "guidelines",
            )
            scenarios = matrix(args.reflection, ["none"], args.candidates)
            folder, _ = RunFolder.create_or_resume(work / "candidates", {
                "questions_file": "gateway/eval/questions/demo.jsonl", "questions_digest": "demo",
                "question_count": len(questions), "scenarios": [s.name for s in scenarios],
                "model": "simulated-model (scripted)", "llm_base_url": llm.base_url, "concurrency": args.concurrency})
            out = io.StringIO()
            status = await run_session(settings, folder, questions, scenarios, concurrency=args.concurrency,
                                       progress=False, collect=False, out=out)
        report = json.loads((folder.report_dir / "report.json").read_text())
        print(f"{len(questions)} questions of the shipped demo set; eval exit status {status}\n")
        print(out.getvalue().split("report:")[0])
        print(candidates_table(report))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        server.destroy()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, nargs="+", default=[1, 3, 5])
    parser.add_argument("--reflection", nargs="+", default=["first_pass", "suspicious"])
    parser.add_argument("--concurrency", type=int, default=8)
    asyncio.run(main(parser.parse_args()))
