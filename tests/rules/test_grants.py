"""Postgres enforces hidden columns too (issue 9, item 2): grants from the rules, and over-privileged roles.

Each layer alone: with the static rule off, the demo reader's grants make Postgres refuse; with a superuser,
the static check refuses; `rules check`, /readyz and the metric report a role that could read more.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
from prometheus_client import REGISTRY
from typer.testing import CliRunner

from gateway.api.app import create_app
from gateway.cli.main import app as cli
from gateway.demo.generator import READER_ROLE, derive_dsn
from gateway.execute.privileges import role_facts
from gateway.rules import load_ruleset, rule_files
from gateway.rules.grants import grants_sql, privilege_problems
from gateway.settings import DatabaseSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
DEMO_RULES = load_ruleset("demo", rule_files(ROOT / "rules", "demo"))[0]
HIDDEN = {("employees", "salary"), ("employees", "email"), ("customers", "email")}


async def sql(dsn: str, rules_dir: Path, query: str, **db: object) -> httpx.Response:
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=dsn, **db)}, rules_dir=rules_dir))  # type: ignore[arg-type]
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        return await http.post("/v1/sql", json={"database": "demo", "sql": query})


@pytest.fixture
async def role(demo_admin_dsn: str) -> AsyncIterator[str]:
    """A fresh login role on the demo database with no grants, dropped afterwards."""
    name = f"grants_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(demo_admin_dsn)
    try:
        await admin.execute(f'CREATE ROLE "{name}" LOGIN')
        await admin.execute(f'GRANT CONNECT ON DATABASE "{await admin.fetchval("SELECT current_database()")}" '
                            f'TO "{name}"')
    finally:
        await admin.close()
    yield name
    admin = await asyncpg.connect(demo_admin_dsn)
    try:
        await admin.execute(f'DROP OWNED BY "{name}"')
        await admin.execute(f'DROP ROLE "{name}"')
    finally:
        await admin.close()


async def test_the_demo_reader_has_exactly_the_grants_of_the_demo_rules(demo_dsn: str, demo_admin_dsn: str) -> None:
    admin = await asyncpg.connect(demo_admin_dsn)
    try:
        facts = await role_facts(admin, "demo", READER_ROLE)
        every = await admin.fetch("SELECT table_name::text, column_name::text FROM information_schema.columns "
                                  "WHERE table_schema = 'public'")
    finally:
        await admin.close()
    assert privilege_problems(facts, DEMO_RULES) == []
    readable = {(t, c) for _, t, c in facts.readable}
    assert readable == {(r[0], r[1]) for r in every} - HIDDEN
    assert not facts.superuser and not facts.writable and not facts.create_schemas


async def test_postgres_refuses_a_hidden_column_when_the_static_rule_is_off(demo_dsn: str, tmp_path: Path) -> None:
    # No rule files: the static check allows everything below; the demo reader's grants must refuse.
    for query in ("SELECT salary FROM employees ORDER BY salary DESC LIMIT 1",
                  "SELECT * FROM customers LIMIT 1",
                  "SELECT e FROM employees e LIMIT 1",
                  "SELECT count(*) FROM employees WHERE email LIKE 'a%'"):
        response = await sql(demo_dsn, tmp_path, query)
        assert response.status_code == 422, (query, response.text)
        body = response.json()
        assert body["code"] == "query_error" and body["sqlstate"] == "42501", body
    ok = await sql(demo_dsn, tmp_path, "SELECT first_name, count(*) FROM employees GROUP BY 1 LIMIT 1")
    assert ok.status_code == 200, ok.text


async def test_the_static_check_refuses_for_a_role_that_may_read_everything(demo_admin_dsn: str) -> None:
    response = await sql(demo_admin_dsn, ROOT / "rules", "SELECT salary FROM employees LIMIT 1")
    assert response.status_code == 422 and response.json()["code"] == "sql_blocked"
    assert "hidden_column" in response.text


async def test_pg_stats_shows_no_statistics_of_ungranted_columns(demo_dsn: str, demo_admin_dsn: str) -> None:
    async def stats(dsn: str) -> set[str]:
        conn = await asyncpg.connect(dsn)
        try:
            rows = await conn.fetch("SELECT attname::text FROM pg_stats WHERE tablename = 'employees'")
        finally:
            await conn.close()
        return {r[0] for r in rows}

    assert {"salary", "email"} <= await stats(demo_admin_dsn)  # the statistics exist
    seen = await stats(demo_dsn)
    assert "first_name" in seen and not {"salary", "email"} & seen


def test_grants_sql_names_no_hidden_column_and_converges() -> None:
    from gateway.execute.introspect import ColumnInfo, Schema, TableInfo

    table = TableInfo("public", "employees", "table", None, 0,
                      [ColumnInfo(c, "text", True) for c in ("employee_id", "salary", "email", "first_name")])
    text = grants_sql(Schema("demo", [table]), DEMO_RULES, 'odd"role', "demo")
    grant = [line for line in text.splitlines() if line.startswith("GRANT SELECT")]
    assert grant == ['GRANT SELECT ("employee_id", "first_name") ON TABLE "public"."employees" TO "odd""role";']
    assert text.index('REVOKE ALL ON ALL TABLES IN SCHEMA "public" FROM "odd""role"') < text.index(grant[0])
    assert "salary" not in text and "email" not in text


def test_rules_grants_prints_and_applies_least_privilege(role: str, demo_admin_dsn: str, demo_dsn: str) -> None:
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_RULES_DIR": str(ROOT / "rules"), "NL2SQL_CONFIG": ""}
    printed = CliRunner().invoke(cli, ["rules", "grants", "demo", "--role", role, "--admin-dsn", demo_admin_dsn],
                                 env=env)
    assert printed.exit_code == 0, printed.output
    assert 'GRANT SELECT ("employee_id", ' in printed.stdout and "salary" not in printed.stdout
    # a role granted a hidden column (and a write) is reported by `rules check` ...
    role_dsn = derive_dsn(demo_dsn, user=role)
    CliRunner().invoke(cli, ["rules", "grants", "demo", "--role", role, "--admin-dsn", demo_admin_dsn, "--apply"],
                       env=env)
    import asyncio

    async def grant(*statements: str) -> None:
        admin = await asyncpg.connect(demo_admin_dsn)
        try:
            for statement in statements:
                await admin.execute(statement)
        finally:
            await admin.close()

    asyncio.run(grant(f'GRANT SELECT (salary) ON employees TO "{role}"', f'GRANT UPDATE ON regions TO "{role}"'))
    check_env = {**env, "NL2SQL_DATABASES__DEMO__DSN": role_dsn}
    checked = CliRunner().invoke(cli, ["rules", "check", "--database", "demo"], env=check_env)
    assert checked.exit_code == 1, checked.output
    assert f"role '{role}' can read hidden columns: employees.salary" in checked.stdout
    assert "can insert, update, delete" in checked.stdout and "regions" in checked.stdout
    # the same through the gateway's own DSN, naming the role as a key's --pg-role
    as_key = CliRunner().invoke(cli, ["rules", "check", "--database", "demo", "--role", role], env=env)
    assert as_key.exit_code == 1 and f"role '{role}' can read hidden columns: employees.salary" in as_key.stdout
    assert f"role '{READER_ROLE}'" not in as_key.stdout  # the demo reader itself is clean
    # ... and `rules grants --apply` takes both away again
    applied = CliRunner().invoke(cli, ["rules", "grants", "demo", "--admin-dsn", demo_admin_dsn, "--apply"],
                                 env=check_env)
    assert applied.exit_code == 0, applied.output
    clean = CliRunner().invoke(cli, ["rules", "check", "--database", "demo"], env=check_env)
    assert clean.exit_code == 0, clean.output


def test_rules_check_reports_a_superuser(demo_admin_dsn: str) -> None:
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_admin_dsn, "NL2SQL_RULES_DIR": str(ROOT / "rules"),
           "NL2SQL_CONFIG": ""}
    result = CliRunner().invoke(cli, ["rules", "check", "--database", "demo"], env=env)
    assert result.exit_code == 1
    assert "is a superuser" in result.stdout
    (line,) = [line for line in result.stdout.splitlines() if "can read hidden columns: " in line]
    named = line.split("can read hidden columns: ")[1].split(" (fix:")[0]
    assert set(named.split(", ")) == {"customers.email", "employees.salary", "employees.email"}


@pytest.mark.parametrize("mode", ["report", "fail"])
async def test_readyz_and_the_metric_report_an_over_privileged_role(demo_admin_dsn: str, mode: str) -> None:
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_admin_dsn, privilege_check=mode)},
                              rules_dir=ROOT / "rules"))
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        response = await http.get("/readyz")
    assert response.status_code == (200 if mode == "report" else 503)
    details = response.json()["privileges"]["demo"]
    assert any("superuser" in d for d in details) and any("can read hidden columns" in d for d in details)
    # /readyz is public: no column, and no role name either
    login = urlsplit(demo_admin_dsn).username
    assert login and f"'{login}'" not in response.text
    assert "salary" not in response.text and "email" not in response.text
    role = urlsplit_user(demo_admin_dsn)
    assert REGISTRY.get_sample_value("nl2sql_role_privilege_problems",
                                     {"database": "demo", "role": role, "problem": "reads_hidden"}) == 3


async def test_the_demo_reader_is_ready_and_clean(demo_dsn: str) -> None:
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn, privilege_check="fail")},
                              rules_dir=ROOT / "rules"))
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        response = await http.get("/readyz")
    assert response.status_code == 200 and response.json()["privileges"] == {"demo": []}


def urlsplit_user(dsn: str) -> str:
    from urllib.parse import urlsplit

    user = urlsplit(dsn).username
    assert user
    return user
