"""``nl2sql-gateway examples list|approve|reject`` through the real command line."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

from gateway.settings import StoreSettings
from gateway.store import Store, examples
from tests.magic.test_cli import cli


async def test_examples_review_from_the_command_line(fresh_db: str, tmp_path: Path) -> None:
    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        first = await examples.add(store.pool, database="demo", question="How many regions?",
                                   sql="SELECT count(*) FROM regions", source="feedback", proposed_by="key:abc")
        second = await examples.add(store.pool, database="demo", question="How many products?",
                                    sql="SELECT count(*) FROM products", source="correction", proposed_by="bob")
    finally:
        await store.close()

    queue = cli(["examples", "list"], fresh_db, tmp_path)
    approved = cli(["examples", "approve", str(first), "--note", "matches", "--reviewer", "alice"], fresh_db, tmp_path)
    again = cli(["examples", "approve", str(first)], fresh_db, tmp_path)
    rejected = cli(["examples", "reject", str(second)], fresh_db, tmp_path)
    missing = cli(["examples", "reject", "999999"], fresh_db, tmp_path)
    listed = cli(["examples", "list", "--status", "all", "--json"], fresh_db, tmp_path)
    bad = cli(["examples", "list", "--status", "maybe"], fresh_db, tmp_path)

    assert queue.returncode == 0, queue.stderr
    assert [line.split()[:2] for line in queue.stdout.splitlines()] == [[str(first), "proposed"],
                                                                         [str(second), "proposed"]]
    assert approved.returncode == 0 and f"example {first} is approved (by alice)" in approved.stdout
    assert again.returncode == 1 and "example_already_reviewed" in again.stderr
    assert rejected.returncode == 0 and f"(by cli:{getpass.getuser()})" in rejected.stdout
    assert missing.returncode == 1 and "unknown_example" in missing.stderr
    rows = {r["id"]: r for r in map(json.loads, listed.stdout.splitlines())}
    assert (rows[first]["status"], rows[first]["reviewed_by"], rows[first]["review_note"]) == (
        "approved", "alice", "matches")
    assert rows[second]["status"] == "rejected" and rows[second]["proposed_by"] == "bob"
    assert bad.returncode == 2
