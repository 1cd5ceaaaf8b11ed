"""Guidelines per database: selection (own version, else global, else the shipped file), rollback and reset
per scope, regeneration per database, and the migration that made existing versions global."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from gateway.magic import lifecycle
from gateway.settings import DatabaseSettings, Limits, Settings, StoreSettings
from gateway.store import Store, corrections, guidelines, migrate
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.ask.helpers import is_generation, is_reflection, sql
from tests.magic.helpers import MagicScript, add_corrections, case, gateway, settings_for


def two_databases(demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp: Path, **magic: Any) -> Settings:
    """``demo`` and ``shop``, both on the demo data, with the file guideline FILE-GUIDELINE."""
    settings = settings_for(demo_dsn, fresh_db, llm, tmp, **magic)
    limits = Limits(statement_timeout_ms=5000, max_rows=200)
    return settings.model_copy(update={"databases": {
        "demo": DatabaseSettings(dsn=demo_dsn, limits=limits), "shop": DatabaseSettings(dsn=demo_dsn, limits=limits),
    }})


async def add_version(store: Store, text: str, database: str | None, *, activate: bool = True) -> int:
    async with store.transaction() as conn:
        version = await guidelines.add_candidate(conn, text=text, parent=None, provenance={}, database=database)
    if activate:
        await guidelines.activate(store.pool, version, actor="test")
    return version


def guideline_shown(llm: ScriptedLLM) -> list[str]:
    """Which tagged guideline each reflection prompt carried, in order."""
    shown = []
    for request in llm.requests:
        if is_reflection(request):
            tags = [t for t in ("DEMO-OWN", "GLOBAL-ONE", "FILE-GUIDELINE") if t in request.text]
            shown.append(",".join(tags) or "none")
    return shown


async def test_each_database_uses_its_own_version_else_the_global_one_else_the_file(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    # Every question fails first and is repaired on reflection, so each answer shows the guideline in force.
    llm.add(lambda r: sql("SELECT count(*) FROM no_such_table") if is_generation(r) else None)
    llm.add(lambda r: sql("SELECT count(*) AS n FROM orders") if is_reflection(r) else None)
    settings = two_databases(demo_dsn, fresh_db, llm, tmp_path)

    async def ask(http: Any, database: str) -> str:
        response = await http.post("/v1/ask", json={"database": database, "question": "How many orders?"})
        assert response.status_code == 200, response.text
        return str(response.json()["guideline_version"])

    async with gateway(settings) as (http, state):
        store = state.store
        assert store is not None
        assert [await ask(http, "demo"), await ask(http, "shop")] == ["default", "default"]
        g = await add_version(store, "1. GLOBAL-ONE: reminders for everyone.", None)
        d = await add_version(store, "1. DEMO-OWN: reminders for demo only.", "demo")
        state.guidelines.invalidate()  # type: ignore[attr-defined]  # written behind the gateway's back
        assert [await ask(http, "demo"), await ask(http, "shop")] == [f"v{d}", f"v{g}"]
        listed = (await http.get("/v1/guidelines", params={"database": "demo"})).json()
        everything = (await http.get("/v1/guidelines")).json()
        only_global = (await http.get("/v1/guidelines", params={"scope": "global"})).json()

        # reset demo: it falls back to the global version; reset global: both use the file again
        demo_reset = await http.post("/v1/guidelines/reset", json={"database": "demo"})
        after_demo_reset = [await ask(http, "demo"), await ask(http, "shop")]
        global_reset = await http.post("/v1/guidelines/reset", json={})
        after_global_reset = [await ask(http, "demo"), await ask(http, "shop")]
        # a database's own file beats default.md once no stored version is in force
        (settings.guidelines_dir / "shop.md").write_text("1. SHOP-FILE: the shop's own shipped reminders.\n")
        shop_file = await ask(http, "shop")

        # rollback per scope: demo's previous version comes back, the global scope is untouched
        rolled = await http.post("/v1/guidelines/rollback", json={"database": "demo"})
        after_rollback = [await ask(http, "demo"), await ask(http, "shop")]
        wrong_scope = await http.post("/v1/guidelines/rollback", json={"database": "shop", "version": d})
        unknown_db = await http.post("/v1/guidelines/reset", json={"database": "nope"})
        never = await add_version(store, "1. never activated", "demo", activate=False)
        never_active = await http.post("/v1/guidelines/rollback", json={"database": "demo", "version": never})
        history = (await http.get("/v1/guidelines/events", params={"database": "demo"})).json()["events"]
        all_events = (await http.get("/v1/guidelines/events")).json()["events"]

    assert guideline_shown(llm)[:4] == ["FILE-GUIDELINE", "FILE-GUIDELINE", "DEMO-OWN", "GLOBAL-ONE"]
    assert listed["in_force"] == {"database": "demo", "source": "database", "version": d, "label": f"v{d}",
                                  "retired": None}
    assert [v["version"] for v in listed["versions"]] == [d] and listed["active"] == d
    assert everything["active"] == g and everything["active_by_database"] == {"demo": d}
    assert {v["version"]: v["database"] for v in everything["versions"]} == {g: None, d: "demo"}
    assert [v["version"] for v in only_global["versions"]] == [g]

    assert demo_reset.status_code == 200
    assert demo_reset.json() == {"database": "demo", "source": "global", "version": g, "label": f"v{g}",
                                 "retired": d}
    assert after_demo_reset == [f"v{g}", f"v{g}"]
    assert global_reset.json()["source"] == "default" and global_reset.json()["retired"] == g
    assert after_global_reset == ["default", "default"]
    assert shop_file == "file:shop.md"

    assert rolled.status_code == 200 and rolled.json()["version"] == d and rolled.json()["database"] == "demo"
    assert after_rollback == [f"v{d}", "file:shop.md"]
    assert wrong_scope.status_code == 404 and wrong_scope.json()["code"] == "unknown_guideline_version"
    assert unknown_db.status_code == 404 and unknown_db.json()["code"] == "unknown_database"
    assert never_active.status_code == 409 and never_active.json()["code"] == "guideline_never_active"
    # the audit trail: newest first, the reset says what it retired and who asked
    assert [(e["action"], e["version"], e["previous"]) for e in history] == [
        ("rollback", d, None), ("reset", None, d), ("activate", d, None)]
    assert history[1]["actor"] == "anonymous" and history[2]["actor"] == "test"
    assert ("reset", None, g) in [(e["action"], e["version"], e["previous"]) for e in all_events
                                  if e["database"] is None]


async def test_regeneration_for_one_database_uses_only_its_corrections(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    script = MagicScript(llm)
    settings = two_databases(demo_dsn, fresh_db, llm, tmp_path, batch_size=2, auto_activate=False)
    async with gateway(settings) as (http, state):
        store = state.store
        assert store is not None
        demo_ids = await add_corrections(store, [1, 2])
        shop_ids = [await corrections.add(store.pool, database="shop", question=case(k).question,
                                          incorrect_sql=case(k).incorrect_sql, corrected_sql=case(k).correct_sql,
                                          source="dba", verified=True) for k in (3, 4)]
        for_demo = await http.post("/v1/guidelines/regenerate", json={"database": "demo", "activate": True})
        first_run_cases = {k for r in script.calls("correction") if (k := _case_number(r)) is not None}
        shop_still_pending = [c.id for c in await corrections.pending(store.pool, verified_only=True, limit=10)]
        global_run = await http.post("/v1/guidelines/regenerate", json={})
        unknown = await http.post("/v1/guidelines/regenerate", json={"database": "nope"})
        versions = {v.version: v for v in await guidelines.list_all(store.pool)}
        demo_in_force = (await state.guidelines.active("demo")).version
        shop_in_force = (await state.guidelines.active("shop")).version
    assert for_demo.status_code == 200, for_demo.text
    report = for_demo.json()
    assert report["database"] == "demo" and report["outcome"] == "rejected"  # no held-out material: the gate refuses
    demo_version = versions[report["version"]]
    assert demo_version.database == "demo" and sorted(demo_version.provenance["corrections"]) == demo_ids
    assert demo_version.evaluation is not None and demo_version.evaluation["database"] == "demo"
    assert shop_still_pending == shop_ids
    assert global_run.json()["database"] is None and global_run.json()["outcome"] == "candidate"
    global_version = versions[global_run.json()["version"]]
    assert global_version.database is None and sorted(global_version.provenance["corrections"]) == shop_ids
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_database"
    assert demo_in_force == shop_in_force == "default"  # nothing was activated
    # the per-database run only ever showed the agents demo's corrections
    assert first_run_cases == {1, 2}
    assert len(script.calls("guideline")) == 2


def _case_number(request: LLMRequest) -> int | None:
    from tests.magic.helpers import number_in

    return number_in(request.last_user)


async def test_versions_stored_before_scopes_become_global_and_keep_working(fresh_db: str) -> None:
    earlier = [m for m in migrate.available() if m.version < _scopes_version()]
    conn = await asyncpg.connect(fresh_db)
    try:
        await conn.execute(migrate.SCHEMA_MIGRATIONS_SQL)
        for m in earlier:
            await conn.execute(m.sql)
            await conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                               m.version, m.name, m.checksum)
        # the shape of the table before this change: one global scope, one active version
        await conn.execute(
            """
            INSERT INTO guideline_versions (version, text, status, activated_at) VALUES
                (1, 'old one', 'retired', now() - interval '1 day'),
                (2, 'old active', 'active', now()),
                (3, 'old candidate', 'candidate', NULL)
            """
        )
        await conn.execute("SELECT setval('guideline_versions_version_seq', 3)")
    finally:
        await conn.close()

    store = await Store.open(StoreSettings(dsn=fresh_db))  # applies the scopes migration
    try:
        old = await guidelines.list_all(store.pool)
        assert [(v.version, v.database, v.status) for v in old] == [
            (1, None, "retired"), (2, None, "active"), (3, None, "candidate")]
        assert (await guidelines.in_force(store.pool, "demo")).version == 2  # type: ignore[union-attr]
        assert (await guidelines.previous_active(store.pool)).version == 1  # type: ignore[union-attr]
        # one active version per scope: a database's version does not retire the global one
        own = await add_version(store, "demo's", "demo")
        assert (await guidelines.active(store.pool)).version == 2  # type: ignore[union-attr]
        assert (await guidelines.in_force(store.pool, "demo")).version == own  # type: ignore[union-attr]
        await guidelines.activate(store.pool, 3)
        assert {v.version: v.status for v in await guidelines.list_all(store.pool)} == {
            1: "retired", 2: "retired", 3: "active", own: "active"}
        # and the index still refuses two active global versions, whatever the code does
        try:
            await store.pool.execute("UPDATE guideline_versions SET status = 'active' WHERE version = 2")
        except asyncpg.UniqueViolationError:
            pass
        else:
            raise AssertionError("two global versions became active")
    finally:
        await store.close()


def _scopes_version() -> int:
    return next(m.version for m in migrate.available() if m.name == "guideline_scopes")


async def test_the_gateway_object_offers_the_scoped_operations(
    demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    from gateway.service import Gateway

    async with Gateway(two_databases(demo_dsn, fresh_db, llm, tmp_path)) as gw:
        store = gw._live.store
        assert store is not None
        v = await add_version(store, "1. DEMO-OWN", "demo")
        assert [x.version for x in await gw.guidelines("demo")] == [v]
        assert await gw.guidelines(only_global=True) == []
        assert (await gw.guideline_in_force("demo")).source == "database"
        reset = await gw.reset_guideline("demo", actor="tester")
        assert (reset.source, reset.retired) == ("default", v)
        assert (await gw.rollback(database="demo")).version == v
        events = await gw.guideline_events("demo")
        assert [(e.action, e.actor) for e in events] == [("rollback", "python"), ("reset", "tester"),
                                                        ("activate", "test")]
        assert (await lifecycle.in_force(gw._live, store, "shop")).label == "default"


async def test_the_cli_manages_a_database_scope(demo_dsn: str, fresh_db: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    config = tmp_path / "gateway.toml"
    config.write_text(f'[store]\ndsn = "{fresh_db}"\n\n[auth]\nenabled = false\n\n'
                      f'[databases.demo]\ndsn = "{demo_dsn}"\n')

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "NL2SQL_CONFIG": str(config)}
        return subprocess.run([sys.executable, "-m", "gateway", "guideline", *args], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=120)

    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        g = await add_version(store, "1. GLOBAL-ONE", None)
        d = await add_version(store, "1. DEMO-OWN", "demo")
        listed = cli("list", "--database", "demo")
        shown = cli("show", "--database", "demo")
        reset = cli("reset", "--database", "demo")
        after_reset = await guidelines.in_force(store.pool, "demo")
        rolled = cli("rollback", "--database", "demo")
        after_rollback = await guidelines.in_force(store.pool, "demo")
        events = cli("events", "--database", "demo")
        unknown = cli("reset", "--database", "nope")
    finally:
        await store.close()
    assert listed.returncode == 0, listed.stderr
    assert f"v{d}" in listed.stdout and f"v{g} " not in listed.stdout
    assert f"in force for demo: v{d} (database)" in listed.stdout
    assert shown.returncode == 0 and "DEMO-OWN" in shown.stdout and "- scope: database demo" in shown.stdout
    assert reset.returncode == 0 and f"demo: retired v{d}; in force now: v{g} (global)" in reset.stdout
    assert after_reset is not None and after_reset.version == g
    assert rolled.returncode == 0 and f"v{d} is active for demo" in rolled.stdout
    assert after_rollback is not None and after_rollback.version == d
    assert [line.split('"action": "')[1].split('"')[0] for line in events.stdout.splitlines()] == [
        "rollback", "reset", "activate"]
    assert '"actor": "cli"' in events.stdout
    assert unknown.returncode == 1 and "unknown_database" in unknown.stderr
