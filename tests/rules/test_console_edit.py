"""Rules edited from the console (PUT /v1/databases/{name}/rules/console, ``Gateway.edit_rules``): written
to their own file, checked like ``rules check`` first, audited, refused for clients and read-only folders,
and in force from the next statement."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import asyncpg
import pytest

from gateway import Gateway, errors
from gateway.auth import Principal, Role
from gateway.settings import StoreSettings
from tests.ask.helpers import ask_settings

ROOT = Path(__file__).resolve().parents[2]
DBA = Principal(name="dba", role=Role.DBA, databases=frozenset({"demo"}))
OTHER_DBA = Principal(name="other-dba", role=Role.DBA, databases=frozenset({"warehouse"}))
CLIENT = Principal(name="analyst", role=Role.CLIENT, databases=frozenset({"*"}))


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    out = {"rules": tmp_path / "rules", "guidelines": tmp_path / "guidelines"}
    for folder in out.values():
        folder.mkdir()
    return out


@pytest.fixture
def rules_dirs(dirs: dict[str, Path]) -> dict[str, Path]:
    shutil.copy(ROOT / "rules" / "demo.yaml", dirs["rules"] / "demo.yaml")
    return dirs


async def test_a_dba_hides_a_column_and_the_next_statement_is_blocked(demo_dsn: str, fresh_db: str,
                                                                      rules_dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, rules_dirs, base_url=None)
    settings.store = StoreSettings(dsn=fresh_db)
    hand_written = (rules_dirs["rules"] / "demo.yaml").read_text()
    async with Gateway(settings) as gw:
        assert gw.check("SELECT last_name FROM customers", "demo")["allowed"]
        out = await gw.edit_rules("demo", ["Customers.Last_Name"], ["Say which year a figure is for."],
                                  {"max_joins": 4}, principal=DBA)
        assert "customers.last_name" in out["hidden_columns"] and "customers.email" in out["hidden_columns"]
        assert "Say which year a figure is for." in out["instructions"]
        assert out["limits"]["max_joins"] == 4 and out["limits"]["max_rows"] == 1000
        verdict = gw.check("SELECT last_name FROM customers", "demo")
        assert not verdict["allowed"] and "hidden_column" in verdict["codes"]
        with pytest.raises(errors.SqlBlocked):
            await gw.sql("demo", "SELECT c.last_name FROM customers c")
        assert (rules_dirs["rules"] / "demo.yaml").read_text() == hand_written  # never rewritten
        assert gw.console_rules("demo", principal=DBA)["hidden_columns"] == ["customers.last_name"]
        # Dropped from the console's list: written as hidden: false, so the column is visible again.
        await gw.edit_rules("demo", [], [], {}, principal=DBA)
        assert "hidden: false" in (rules_dirs["rules"] / "demo" / "console.yaml").read_text()
        assert gw.check("SELECT last_name FROM customers", "demo")["allowed"]
        # A column the hand-written file hides cannot be un-hidden from the console.
        assert not gw.check("SELECT email FROM customers", "demo")["allowed"]
    conn = await asyncpg.connect(fresh_db)
    try:
        rows = await conn.fetch("SELECT actor, after FROM rules_edits WHERE database = 'demo' ORDER BY id")
    finally:
        await conn.close()
    assert [r["actor"] for r in rows] == ["name:dba", "name:dba"]
    after = [json.loads(r["after"]) for r in rows]  # a plain connection: jsonb as text
    assert after[0]["hidden_columns"] == ["customers.last_name"] and after[1]["hidden_columns"] == []


async def test_edits_that_rules_check_rejects_are_not_written(demo_dsn: str, rules_dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, rules_dirs, base_url=None)
    console_file = rules_dirs["rules"] / "demo" / "console.yaml"
    async with Gateway(settings) as gw:
        for hidden, limits, says in (
                (["customers.no_such_column"], {}, "unknown column"),
                (["nonsense"], {}, "not table.column"),
                ([], {"max_rows": 50}, "already set"),  # demo.yaml sets max_rows
                ([], {"max_rowz": 5}, "unknown limit"),
                ([], {"max_joins": 0}, "positive")):
            with pytest.raises(errors.RulesInvalid) as refused:
                await gw.edit_rules("demo", hidden, [], limits, principal=DBA)
            assert says in refused.value.detail and refused.value.extra["problems"]
            assert not console_file.exists()


async def test_only_a_dba_of_that_database_may_edit(demo_dsn: str, rules_dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, rules_dirs, base_url=None)
    async with Gateway(settings) as gw:
        for who in (CLIENT, OTHER_DBA):
            with pytest.raises(errors.Forbidden):
                await gw.edit_rules("demo", ["customers.last_name"], [], {}, principal=who)
            with pytest.raises(errors.Forbidden):
                gw.console_rules("demo", principal=who)
        # a tenant's dba (under a row policy) may not change the rules every tenant shares
        tenant_dba = Principal(name="tenant-dba", role=Role.DBA, databases=frozenset({"demo"}),
                               claims=(("tenant", "t1"),))
        with pytest.raises(errors.Forbidden, match="row policy"):
            await gw.edit_rules("demo", ["customers.last_name"], [], {}, principal=tenant_dba)
        assert not (rules_dirs["rules"] / "demo").exists()


async def test_a_read_only_rules_folder_is_refused_with_its_code(demo_dsn: str, dirs: dict[str, Path],
                                                                 tmp_path: Path) -> None:
    # sysfs refuses new entries even to root: a folder the gateway cannot write, as a read-only mount is.
    folder = Path("/sys/kernel")
    try:
        (folder / "demo").mkdir()
    except OSError:
        pass
    else:
        os.rmdir(folder / "demo")
        pytest.skip("/sys/kernel is writable here")
    settings = ask_settings(demo_dsn, dirs, base_url=None)
    settings.rules_dir = folder
    settings.rules_state_dir = tmp_path / "state"
    async with Gateway(settings) as gw:
        with pytest.raises(errors.RulesReadOnly) as refused:
            await gw.edit_rules("demo", ["customers.last_name"], [], {}, principal=DBA)
        assert refused.value.code == "rules_read_only" and "/sys/kernel" in refused.value.detail
