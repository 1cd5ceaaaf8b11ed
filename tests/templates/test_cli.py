"""``nl2sql-gateway templates ...`` through the real command line."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
from pathlib import Path


def cli(args: list[str], store_dsn: str, demo_dsn: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NL2SQL_STORE__DSN": store_dsn, "NL2SQL_AUTH__ENABLED": "false",
           "NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_MAGIC__SCHEDULE": "false"}
    env.pop("NL2SQL_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "gateway", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def test_templates_from_the_command_line(fresh_db: str, demo_dsn: str, tmp_path: Path) -> None:
    made = cli(["templates", "create", "orders_by_status", "-d", "demo", "--sql",
                "SELECT count(*) AS orders FROM orders WHERE status = $1", "--param", "status=orders.status=shipped",
                "--question", "How many orders are shipped?"], fresh_db, demo_dsn, tmp_path)
    assert made.returncode == 0, made.stderr
    assert "template orders_by_status created on demo: How many orders are {status}" in made.stdout
    listed = cli(["templates", "list", "--json"], fresh_db, demo_dsn, tmp_path)
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert row["name"] == "orders_by_status" and row["created_by"].endswith(f"cli:{getpass.getuser()}")

    ran = cli(["templates", "run", "orders_by_status", "--set", "status=Pending"], fresh_db, demo_dsn, tmp_path)
    assert ran.returncode == 0, ran.stderr
    answer = json.loads(ran.stdout)
    assert answer["trusted"]["parameters"] == {"status": "pending"} and answer["status"] == "ok"
    bad = cli(["templates", "run", "orders_by_status", "--set", "status=pendng"], fresh_db, demo_dsn, tmp_path)
    assert bad.returncode == 1 and "template_value_invalid" in bad.stderr and "suggestions: pending" in bad.stderr
    invalid = cli(["templates", "create", "broken", "-d", "demo", "--sql", "SELECT $1", "--question", "what now"],
                  fresh_db, demo_dsn, tmp_path)
    assert invalid.returncode == 1 and "template_invalid" in invalid.stderr
    suggested = cli(["templates", "suggest"], fresh_db, demo_dsn, tmp_path)
    assert suggested.returncode == 0 and suggested.stdout == ""
    deleted = cli(["templates", "delete", "orders_by_status"], fresh_db, demo_dsn, tmp_path)
    assert deleted.returncode == 0 and "deleted" in deleted.stdout
    gone = cli(["templates", "show", "orders_by_status"], fresh_db, demo_dsn, tmp_path)
    assert gone.returncode == 1 and "unknown_template" in gone.stderr
