"""Nothing of one request is visible to the next on a pooled connection (issue 9, item 4).

The gateway fixture has one connection per database (``pool_max_size=1``), so every request below runs on
the same Postgres session. The execution layer is called directly for the reads, so these tests hold
whether or not the static check refuses the catalog views they use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from gateway.execute.run import run_query
from tests.auth.conftest import Gateway, Roles, bearer

SECRET = "k3y-a-secret-literal"
CATALOGS = ("VIEW pg_catalog.pg_prepared_statements", "FUNCTION pg_catalog.pg_prepared_statement()",
            "VIEW pg_catalog.pg_cursors", "FUNCTION pg_catalog.pg_cursor()")


@pytest.fixture(autouse=True, scope="module")
async def catalogs_readable(demo_admin_dsn: str, roles: Roles) -> AsyncIterator[None]:
    """The demo's grants take these views from PUBLIC; give them back so this layer is tested alone."""
    who = ", ".join(f'"{r}"' for r in (roles.reader, roles.bi, roles.rls_a))

    async def each(verb: str, direction: str) -> None:
        conn = await asyncpg.connect(demo_admin_dsn)
        try:
            for kind_name in CATALOGS:
                kind, name = kind_name.split(" ", 1)
                what = "EXECUTE ON FUNCTION" if kind == "FUNCTION" else "SELECT ON"
                await conn.execute(f"{verb} {what} {name} {direction} {who}")
        finally:
            await conn.close()

    await each("GRANT", "TO")
    yield
    await each("REVOKE", "FROM")


async def _prepared_statements(gw: Gateway, role: str | None) -> list[str]:
    result = await run_query(gw.state.targets.by_name["demo"],
                             "SELECT name || ': ' || statement FROM pg_prepared_statements", role=role)
    return [row[0] for row in result.rows]


async def test_two_keys_on_one_connection_cannot_read_each_others_sql(gw: Gateway, roles: Roles) -> None:
    assert gw.state.targets.by_name["demo"].settings.pool_max_size == 1
    key_a = await gw.key(pg_role=roles.bi)
    key_b = await gw.key(pg_role=roles.rls_a)
    sql_a = f"SELECT name FROM regions WHERE name <> '{SECRET}'"
    for _ in range(3):  # repeated, as a dashboard does: a statement cache would keep it
        response = await gw.http.post("/v1/sql", json={"database": "demo", "sql": sql_a}, headers=bearer(key_a))
        assert response.status_code == 200, response.text
    # B through the API, whatever the static check says of the catalog view: never A's literal.
    response = await gw.http.post("/v1/sql", headers=bearer(key_b), json={
        "database": "demo", "sql": "SELECT statement FROM pg_prepared_statements"})
    assert SECRET not in response.text
    # And the execution layer alone, as B's role and as the login role, on the same connection.
    assert await _prepared_statements(gw, roles.rls_a) == []
    assert await _prepared_statements(gw, None) == []


async def test_a_named_statement_or_held_cursor_does_not_outlive_its_request(gw: Gateway, roles: Roles) -> None:
    target = gw.state.targets.by_name["demo"]
    # The static check refuses these; the execution layer runs whatever it is given, so the pool's reset
    # is what must clear them.
    await run_query(target, f"PREPARE planted AS SELECT '{SECRET}'::text", role=roles.bi)
    await run_query(target, f"DECLARE planted CURSOR WITH HOLD FOR SELECT '{SECRET}'::text", role=roles.bi)
    assert await _prepared_statements(gw, roles.rls_a) == []
    cursors = await run_query(target, "SELECT name, statement FROM pg_cursors", role=roles.rls_a)
    assert [name for name, _ in cursors.rows if name == "planted"] == []  # only this read's own portal
    assert SECRET not in str(cursors.rows)


async def test_a_session_setting_does_not_outlive_its_request(gw: Gateway, roles: Roles) -> None:
    target = gw.state.targets.by_name["demo"]
    await run_query(target, f"SELECT set_config('nl2sql_test.planted', '{SECRET}', false)", role=roles.bi)
    result = await run_query(target, "SELECT current_setting('nl2sql_test.planted', true)", role=roles.rls_a)
    assert SECRET not in str(result.rows)
    role = await run_query(target, "SELECT current_user::text")
    assert role.rows == [[roles.reader]]


async def test_a_keys_mapped_role_is_checked_for_privileges(gw: Gateway, demo_admin_dsn: str) -> None:
    """Start-up, /readyz and the metric check each active key's --pg-role, not only the login role."""
    from gateway.rules.grants import report_privileges

    name = f"auth_writer_{SECRET[:3]}"
    conn = await asyncpg.connect(demo_admin_dsn)
    try:
        await conn.execute(f'CREATE ROLE "{name}" NOLOGIN')
        await conn.execute(f'GRANT UPDATE ON regions TO "{name}"')
    finally:
        await conn.close()
    try:
        before = await report_privileges(gw.state, log_each=False)
        assert not any(name in d for d in before.details("demo"))
        token = await gw.key(pg_role=name, databases=("demo",))
        report = await report_privileges(gw.state, log_each=False)
        assert [p.code for p in report.problems["demo"] if p.role == name] == ["can_write"]
        ready = await gw.http.get("/readyz")
        # /readyz is public: it says what kind of problem there is, never which role has it.
        public = ready.json()["privileges"]["demo"]
        assert any("can insert" in d for d in public) and not any(name in d for d in public), public
        dba = await gw.key("dba", ("demo",))
        rules = await gw.http.get("/v1/databases/demo/rules", headers={"authorization": f"Bearer {dba}"})
        assert any(name in d and "can insert" in d for d in rules.json()["privileges"]), rules.text
    finally:
        from gateway.store import api_keys

        assert gw.state.store is not None
        if "token" in locals():
            await api_keys.revoke(gw.state.store.pool, token.split("_")[1])
        conn = await asyncpg.connect(demo_admin_dsn)
        try:
            await conn.execute(f'DROP OWNED BY "{name}"')
            await conn.execute(f'DROP ROLE "{name}"')
        finally:
            await conn.close()
