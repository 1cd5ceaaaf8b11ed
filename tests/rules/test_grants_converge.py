"""`rules grants --apply` converges, or says why not: a grant to PUBLIC is revoked, a role the login role
inherits hidden columns from is named (and, with --revoke-inherited, no longer inherited from), a superuser
is told to use a dedicated role. Postgres itself (has_column_privilege) is the judge, after the apply."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import asyncpg
import pytest
from typer.testing import CliRunner

from gateway.cli import app as cli
from gateway.execute.introspect import ColumnInfo, Schema, TableInfo
from gateway.rules.grants import grants_sql
from tests.rules.test_grants import DEMO_RULES, ROOT


def run_sql(dsn: str, *statements: str) -> list[object]:
    async def go() -> list[object]:
        conn = await asyncpg.connect(dsn)
        try:
            return [await conn.fetchval(s) for s in statements]
        finally:
            await conn.close()
    return asyncio.run(go())


def reads(dsn: str, role: str, table: str, column: str) -> bool:
    (found,) = run_sql(dsn, f"SELECT has_column_privilege('{role}', 'public.{table}', '{column}', 'SELECT')")
    return bool(found)


@pytest.fixture
def roles(demo_admin_dsn: str) -> Iterator[tuple[str, str]]:
    """A login role with no grants, and a group role; both dropped afterwards, with PUBLIC's test grant."""
    login, group = f"conv_{uuid.uuid4().hex[:8]}", f"group_{uuid.uuid4().hex[:8]}"
    (database,) = run_sql(demo_admin_dsn, "SELECT current_database()")
    run_sql(demo_admin_dsn, f'CREATE ROLE "{login}" LOGIN', f'CREATE ROLE "{group}" NOLOGIN',
            f'GRANT CONNECT ON DATABASE "{database}" TO "{login}"')
    try:
        yield login, group
    finally:
        run_sql(demo_admin_dsn, "REVOKE ALL ON employees FROM PUBLIC", f'DROP OWNED BY "{login}", "{group}"',
                f'DROP ROLE "{login}"', f'DROP ROLE "{group}"')


def grants(demo_dsn: str, *args: str):  # type: ignore[no-untyped-def]
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_RULES_DIR": str(ROOT / "rules"), "NL2SQL_CONFIG": ""}
    return CliRunner().invoke(cli, ["rules", "grants", "demo", *args], env=env)


def test_a_grant_to_public_is_revoked_and_the_apply_checked(roles: tuple[str, str], demo_dsn: str,
                                                            demo_admin_dsn: str) -> None:
    login, _ = roles
    run_sql(demo_admin_dsn, "GRANT SELECT ON employees TO PUBLIC")
    assert reads(demo_admin_dsn, login, "employees", "salary")

    kept = grants(demo_dsn, "--role", login, "--admin-dsn", demo_admin_dsn, "--apply", "--keep-public")
    assert kept.exit_code == 1, kept.output
    assert "employees.salary" in kept.stderr and "PUBLIC" in kept.stderr and "--keep-public" in kept.stderr
    assert reads(demo_admin_dsn, login, "employees", "salary")

    applied = grants(demo_dsn, "--role", login, "--admin-dsn", demo_admin_dsn, "--apply")
    assert applied.exit_code == 0, applied.output
    assert 'REVOKE ALL ON TABLE "public"."employees" FROM PUBLIC;' in applied.stdout
    assert "can read no hidden column" in applied.stderr
    assert not reads(demo_admin_dsn, login, "employees", "salary")
    assert not reads(demo_admin_dsn, "public", "employees", "salary")
    assert reads(demo_admin_dsn, login, "employees", "first_name")  # its own grant on the visible columns


def test_an_inherited_role_is_named_and_only_cut_off_on_request(roles: tuple[str, str], demo_dsn: str,
                                                                demo_admin_dsn: str) -> None:
    login, group = roles
    run_sql(demo_admin_dsn, f'GRANT SELECT ON employees TO "{group}"', f'GRANT "{group}" TO "{login}"')
    assert reads(demo_admin_dsn, login, "employees", "salary")

    printed = grants(demo_dsn, "--role", login, "--admin-dsn", demo_admin_dsn)
    assert printed.exit_code == 0 and repr(group) in printed.stderr and "--revoke-inherited" in printed.stderr

    applied = grants(demo_dsn, "--role", login, "--admin-dsn", demo_admin_dsn, "--apply")
    assert applied.exit_code == 1, applied.output
    assert f"inherits them from role {group!r}" in applied.stderr and "employees.salary" in applied.stderr
    assert f"--role {group}" in applied.stderr  # the other way out: least privilege for that role
    assert reads(demo_admin_dsn, login, "employees", "salary") and reads(demo_admin_dsn, group, "employees", "salary")

    cut = grants(demo_dsn, "--role", login, "--admin-dsn", demo_admin_dsn, "--apply", "--revoke-inherited")
    assert cut.exit_code == 0, cut.output
    assert f'REVOKE INHERIT OPTION FOR "{group}" FROM "{login}"' in cut.stdout
    assert not reads(demo_admin_dsn, login, "employees", "salary")
    # the other role keeps its privileges, and the login role may still SET ROLE to it (as for a key's role)
    assert reads(demo_admin_dsn, group, "employees", "salary")
    assert run_sql(demo_admin_dsn, f"SELECT pg_has_role('{login}', '{group}', 'SET')") == [True]


def test_a_superuser_is_told_to_use_a_dedicated_role(demo_admin_dsn: str) -> None:
    result = grants(demo_admin_dsn, "--admin-dsn", demo_admin_dsn, "--apply")
    assert result.exit_code == 1
    assert result.stdout == "" and "is a superuser" in result.stderr and "CREATE ROLE nl2sql_gateway" in result.stderr
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_admin_dsn, "NL2SQL_RULES_DIR": str(ROOT / "rules"), "NL2SQL_CONFIG": ""}
    checked = CliRunner().invoke(cli, ["rules", "check", "--database", "demo"], env=env)
    (line,) = [line for line in checked.stdout.splitlines() if "is a superuser" in line.split(" (fix: ")[0]]
    assert "dedicated login role" in line and "rules grants demo --apply" not in line


def test_public_loses_only_tables_with_hidden_columns() -> None:
    tables = [TableInfo("public", "employees", "table", None, 0,
                        [ColumnInfo(c, "text", True) for c in ("employee_id", "salary")]),
              TableInfo("public", "regions", "table", None, 0, [ColumnInfo("name", "text", True)])]
    text = grants_sql(Schema("demo", tables), DEMO_RULES, "reader", "demo")
    assert [line for line in text.splitlines() if "ON TABLE" in line and "PUBLIC" in line] == [
        'REVOKE ALL ON TABLE "public"."employees" FROM PUBLIC;']
    kept = grants_sql(Schema("demo", tables), DEMO_RULES, "reader", "demo", public_revokes=False)
    assert "FROM PUBLIC" not in kept
