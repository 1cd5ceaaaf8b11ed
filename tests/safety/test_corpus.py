"""A held-out style run: the corpus through the real CLI, ``check --jsonl --database demo``, demo rules.

``corpus/hidden_demo.jsonl`` holds leaks of the demo's hidden columns (customers.email, employees.salary,
employees.email) in many forms and ordinary BI queries over the demo schema. Every leak must be refused
and at least 99% of the ordinary queries allowed. The policy comes from rules/demo.yaml through a
temporary config file whose rules_dir points at the project's rules/ directory, as a DBA would set it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parent / "corpus" / "hidden_demo.jsonl"


def test_corpus_through_the_cli(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(f'rules_dir = "{(ROOT / "rules").as_posix()}"\n\n'
                      '[databases.demo]\ndsn = "postgresql://reader@127.0.0.1:5432/demo"\n', encoding="utf-8")
    items = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    stdin = "".join(json.dumps({"id": i["id"], "sql": i["sql"]}) + "\n" for i in items)
    result = subprocess.run([sys.executable, "-m", "gateway", "check", "--jsonl", "--database", "demo",
                             "--config", str(config)], input=stdin, capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    # Verdict lines only: the CLI may log a rules_loaded line on stdout too.
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"id"')]
    verdicts = {v["id"]: v for v in lines if "allowed" in v}
    assert len(verdicts) == len(items)
    leaks = [i for i in items if i["kind"] == "leak"]
    ordinary = [i for i in items if i["kind"] == "ordinary"]
    assert len(leaks) >= 200 and len(ordinary) >= 200
    allowed_leaks = [i["sql"] for i in leaks if verdicts[i["id"]]["allowed"]]
    assert allowed_leaks == []
    refused = [(i["sql"], verdicts[i["id"]]["codes"]) for i in ordinary if not verdicts[i["id"]]["allowed"]]
    assert len(refused) <= len(ordinary) // 100, refused


async def test_ordinary_corpus_queries_run_on_the_demo(demo_admin_dsn: str, demo_dsn: str) -> None:
    # The 99% bar means something only if the ordinary queries are real SQL for the demo's schema: each runs
    # as the admin. As the demo's reader (column grants from the rules), Postgres may refuse one with
    # insufficient_privilege and nothing else: a star under EXISTS, which the static check lets through as
    # data-free, still needs SELECT on every column it names (see the README's hidden-data section).
    failures, refused = await _run_ordinary(demo_admin_dsn), await _run_ordinary(demo_dsn)
    assert failures == []
    assert [f for f in refused if f[2] != "42501"] == []
    assert all("EXISTS" in sql.upper() and "*" in sql for _, sql, _ in refused), refused


async def _run_ordinary(dsn: str) -> list[tuple[str, str, str]]:
    conn = await asyncpg.connect(dsn)
    failures = []
    try:
        for line in CORPUS.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            if item["kind"] != "ordinary":
                continue
            try:
                async with conn.transaction(readonly=True):
                    await conn.execute("SET LOCAL statement_timeout = '5s'")
                    await conn.fetch(item["sql"])
            except asyncpg.PostgresError as exc:
                failures.append((item["id"], item["sql"], str(exc.sqlstate)))
    finally:
        await conn.close()
    return failures
