"""`nl2sql-gateway init DSN`: a commented config file and a starter rules file that load as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from gateway.rules import RulesRegistry

ENV = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "OPENAI_"))}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=120)


def test_init_writes_config_and_rules_that_the_gateway_reads(demo_dsn: str, tmp_path: Path) -> None:
    result = run(["init", f"shop={demo_dsn}"], tmp_path)
    assert result.returncode == 0, result.stderr
    config, rules = tmp_path / "nl2sql-gateway.toml", tmp_path / "rules" / "shop.yaml"
    assert config.is_file() and rules.is_file()
    assert "[databases.shop]" in config.read_text() and config.read_text().count("#") > 10  # commented

    starter = yaml.safe_load(rules.read_text())
    orders = starter["tables"]["orders"]
    assert orders["description"]  # the table's comment in the demo database
    assert orders["columns"]["status"]["description"]
    assert "hidden: true" in rules.read_text()  # where to hide things is shown
    registry = RulesRegistry(tmp_path / "rules")
    assert registry.problems("shop") == []
    assert registry.get("shop").table_descriptions["orders"] == orders["description"]

    # the written config is the one `serve`/`schema` read from that directory, and rules check is clean
    schema = run(["schema", "shop"], tmp_path)
    assert schema.returncode == 0, schema.stderr
    assert "orders" in {t["name"] for t in json.loads(schema.stdout)["tables"]}
    checked = run(["rules", "check", "--database", "shop"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # the least-privilege role SQL for a dedicated role is on stdout (the rest on stderr): column grants on
    # every visible column of the database, and how to print them again after hiding something
    assert "nl2sql-gateway rules grants shop --role nl2sql_gateway" in result.stdout
    assert 'GRANT SELECT ("order_id"' in result.stdout and '"nl2sql_gateway"' in result.stdout
    assert "BEGIN;" in result.stdout and result.stdout.rstrip().endswith("COMMIT;")
    assert "wrote nl2sql-gateway.toml" in result.stderr

    again = run(["init", f"shop={demo_dsn}"], tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def test_init_keeps_a_password_out_of_the_file(demo_dsn: str, tmp_path: Path) -> None:
    with_password = demo_dsn.replace("nl2sql_reader@", "nl2sql_reader:not-in-file@")
    result = run(["init", with_password], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "not-in-file" not in (tmp_path / "nl2sql-gateway.toml").read_text()
    assert "NL2SQL_DATABASES__NL2SQL_TEST_DEMO__PASSWORD" in result.stderr
