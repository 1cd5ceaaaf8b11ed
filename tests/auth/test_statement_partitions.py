"""Prepared statements kept on a pooled connection serve one principal only (gateway.execute.statements).

The gateway fixture has one connection per database (``pool_max_size=1``), so the requests below
interleave on the same Postgres session: the same SQL text under two keys whose roles see different
columns or rows, a table changed under a kept statement, a principal switch that fails half-way, and a
connection used by the pool's other callers in between.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from gateway.auth.keys import Principal, Role
from gateway.execute import statements
from gateway.execute.run import run_query
from tests.auth.conftest import Gateway, Roles, admin, bearer
from tests.auth.test_pooled_connections import catalogs_readable  # noqa: F401 - pg_prepared_statements readable

LISTING = "SELECT name, statement FROM pg_prepared_statements"


def partition(token: str, pg_role: str | None) -> str:
    """The principal string the gateway passes for this key (as gateway.service does)."""
    return Principal(name="k", role=Role.CLIENT, databases=frozenset(), pg_role=pg_role,
                     key_id=token.split("_")[1]).partition


async def prepared(gw: Gateway, database: str, token: str, pg_role: str | None) -> dict[str, str]:
    """The prepared statements a key's own request sees on the connection, text by name (its own listing
    left out)."""
    result = await run_query(gw.state.targets.by_name[database], LISTING, role=pg_role,
                             principal=partition(token, pg_role))
    return {name: text for name, text in result.rows if text != LISTING}


@pytest.fixture
async def price_blind(demo_admin_dsn: str, roles: Roles) -> AsyncIterator[str]:
    """A role that may read products' ids and names, not their prices."""
    name = f"auth_noprice_{uuid.uuid4().hex[:8]}"
    await admin(demo_admin_dsn, f'CREATE ROLE "{name}" NOLOGIN', f'GRANT USAGE ON SCHEMA public TO "{name}"',
                f'GRANT SELECT (product_id, name) ON products TO "{name}"', f'GRANT "{name}" TO "{roles.reader}"',
                f'GRANT SELECT ON pg_catalog.pg_prepared_statements TO "{name}"',
                f'GRANT EXECUTE ON FUNCTION pg_catalog.pg_prepared_statement() TO "{name}"')
    yield name
    await admin(demo_admin_dsn, f'REVOKE SELECT ON pg_catalog.pg_prepared_statements FROM "{name}"',
                f'REVOKE EXECUTE ON FUNCTION pg_catalog.pg_prepared_statement() FROM "{name}"',
                f'DROP OWNED BY "{name}"', f'DROP ROLE "{name}"')


async def test_same_sql_under_two_keys_with_different_column_grants(gw: Gateway, roles: Roles,
                                                                     price_blind: str) -> None:
    sql = "SELECT product_id, list_price FROM products ORDER BY product_id LIMIT 3"
    full = await gw.key(pg_role=roles.bi)
    blind = await gw.key(pg_role=price_blind)
    for _ in range(3):  # interleaved on the one connection, the text kept prepared for the first key
        ok = await gw.http.post("/v1/sql", json={"database": "demo", "sql": sql}, headers=bearer(full))
        assert ok.status_code == 200, ok.text
        assert len(ok.json()["rows"]) == 3
        kept = await prepared(gw, "demo", full, roles.bi)
        assert sql in kept.values()  # kept: the mechanism under test is on
        refused = await gw.http.post("/v1/sql", json={"database": "demo", "sql": sql}, headers=bearer(blind))
        assert refused.status_code == 422, refused.text
        assert refused.json()["sqlstate"] == "42501"
        # The second key sees at most its own statement for the same text, never the first key's.
        assert not set(kept) & set(await prepared(gw, "demo", blind, price_blind))


async def test_same_sql_under_two_keys_with_row_level_security(gw: Gateway, roles: Roles) -> None:
    sql = "SELECT body FROM notes ORDER BY id"
    key_a = await gw.key(pg_role=roles.rls_a)
    key_b = await gw.key(pg_role=roles.rls_b)
    for _ in range(3):
        a = await gw.http.post("/v1/sql", json={"database": "rls", "sql": sql}, headers=bearer(key_a))
        assert a.status_code == 200, a.text
        assert a.json()["rows"] == [["a-one"], ["a-two"]]
        b = await gw.http.post("/v1/sql", json={"database": "rls", "sql": sql}, headers=bearer(key_b))
        assert b.status_code == 200, b.text
        assert b.json()["rows"] == [["b-one"]]


async def test_the_same_key_name_with_another_role_is_another_partition(roles: Roles) -> None:
    key = "nl2sql_0123456789ab_" + "0" * 64
    assert partition(key, roles.bi) != partition(key, roles.rls_a)
    anonymous = Principal(name="anonymous", role=Role.ADMIN, databases=frozenset())
    assert anonymous.partition != partition(key, None)


async def test_a_table_changed_under_a_kept_statement_is_prepared_again(gw: Gateway, demo_admin_dsn: str,
                                                                        roles: Roles) -> None:
    table = f"probe_{uuid.uuid4().hex[:8]}"
    await admin(demo_admin_dsn, f"CREATE TABLE {table} (id int)", f"INSERT INTO {table} VALUES (1)",
                f'GRANT SELECT ON {table} TO "{roles.reader}"')
    try:
        target = gw.state.targets.by_name["demo"]
        token = await gw.key()
        sql = f"SELECT id FROM {table}"
        first = await run_query(target, sql, principal=partition(token, None))
        assert [c.type for c in first.columns] == ["int4"]
        assert sql in (await prepared(gw, "demo", token, None)).values()
        # The result type changes: Postgres refuses the kept statement ("cached plan must not change
        # result type"); the gateway goes back to the savepoint and prepares it again.
        await admin(demo_admin_dsn, f"ALTER TABLE {table} ALTER COLUMN id TYPE bigint")
        again = await run_query(target, sql, principal=partition(token, None))
        assert [c.type for c in again.columns] == ["int8"]
        assert again.rows == [[1]]
    finally:
        await admin(demo_admin_dsn, f"DROP TABLE {table}")


async def test_a_principal_switch_that_fails_half_way_leaves_nothing_usable(gw: Gateway, roles: Roles) -> None:
    sql = "SELECT name FROM regions ORDER BY name"
    token = await gw.key(pg_role=roles.bi)
    ok = await gw.http.post("/v1/sql", json={"database": "demo", "sql": sql}, headers=bearer(token))
    assert ok.status_code == 200, ok.text
    # Another key whose role does not exist: DEALLOCATE ALL runs, then SET LOCAL ROLE fails in the same
    # round trip. The first key's statement is gone on the server; the process must not think it is kept.
    broken = await gw.key(pg_role=f"no_such_role_{uuid.uuid4().hex[:6]}")
    failed = await gw.http.post("/v1/sql", json={"database": "demo", "sql": sql}, headers=bearer(broken))
    assert failed.status_code >= 400
    again = await gw.http.post("/v1/sql", json={"database": "demo", "sql": sql}, headers=bearer(token))
    assert again.status_code == 200, again.text
    assert again.json()["rows"] == ok.json()["rows"]


def test_an_unsure_connection_is_deallocated_again_until_a_claim_succeeds() -> None:
    class State:  # what the session holds of asyncpg's statement state
        closed = False

        def detach(self) -> None:
            pass

        def mark_closed(self) -> None:
            self.closed = True

    session = statements.Session()
    assert statements.claim(session, "a") == statements.DEALLOCATE  # nobody's yet: unknown
    statements.claimed(session, "a")
    kept = State()
    session.statements["SELECT 1"] = kept
    assert statements.claim(session, "a") == ""
    assert statements.claim(session, "b") == statements.DEALLOCATE
    assert kept.closed and not session.statements  # forgotten before the round trip is even sent
    # That round trip failed (claimed was never called): even the first principal deallocates again.
    assert statements.claim(session, "a") == statements.DEALLOCATE
    statements.claimed(session, "a")
    assert statements.claim(session, "a") == ""


async def test_a_connection_used_by_the_pool_elsewhere_gets_the_full_reset(gw: Gateway, roles: Roles) -> None:
    sql = "SELECT name FROM regions ORDER BY name"
    token = await gw.key(pg_role=roles.bi)
    assert (await gw.http.post("/v1/sql", json={"database": "demo", "sql": sql},
                               headers=bearer(token))).status_code == 200
    target = gw.state.targets.by_name["demo"]
    async with target.pool.acquire() as conn:  # another caller of the pool, e.g. introspection
        await conn.execute("PREPARE planted AS SELECT 'planted'::text")
    listed = await prepared(gw, "demo", token, roles.bi)
    assert "planted" not in listed
    assert sql not in listed.values()  # the full reset deallocated the key's statements too


async def test_the_session_is_reset_between_requests_of_the_same_key(gw: Gateway, roles: Roles,
                                                                     demo_admin_dsn: str) -> None:
    """The reset that now rides on the ROLLBACK (and keeps the same key's statements) still resets what a
    rollback does not undo: a session advisory lock here."""
    target = gw.state.targets.by_name["demo"]
    token = await gw.key(pg_role=roles.bi)
    who = partition(token, roles.bi)
    await run_query(target, "SELECT pg_advisory_lock(424242)", role=roles.bi, principal=who)
    conn = await asyncpg.connect(demo_admin_dsn)
    try:
        assert await conn.fetchval("SELECT pg_try_advisory_lock(424242)")  # released with the request
        await conn.execute("SELECT pg_advisory_unlock_all()")
    finally:
        await conn.close()
    after = await run_query(target, "SELECT current_user::text", role=roles.bi, principal=who)
    assert after.rows == [[roles.bi]]
    plain = await run_query(target, "SELECT current_user::text")
    assert plain.rows == [[roles.reader]]  # the key's role ended with its transaction


async def test_kept_statements_are_bounded_by_their_total_text(gw: Gateway, roles: Roles) -> None:
    """Long texts under the per-statement limit still add up: the oldest go once the total would pass
    MAX_KEPT_CHARS, on the server as well as here."""
    target = gw.state.targets.by_name["demo"]
    token = await gw.key(pg_role=roles.bi)
    who = partition(token, roles.bi)
    size = statements.MAX_SQL_CHARS - 100
    texts = [f"SELECT {i} AS n, '{'x' * (size - 40)}'::text AS pad" for i in range(20)]
    assert sum(map(len, texts)) > statements.MAX_KEPT_CHARS
    for sql in texts:
        assert (await run_query(target, sql, role=roles.bi, principal=who)).rows[0][0] == texts.index(sql)
    listed = await prepared(gw, "demo", token, roles.bi)
    kept = [text for text in listed.values() if text in texts]
    assert texts[-1] in kept and texts[0] not in kept
    assert sum(map(len, kept)) <= statements.MAX_KEPT_CHARS
    assert len(kept) == statements.MAX_KEPT_CHARS // len(texts[0])  # as many as fit, no fewer


async def test_a_kept_statement_closed_under_the_session_is_replaced_and_counted_once(demo_dsn: str) -> None:
    """asyncpg may mark a statement closed (its connection dropped it); the session then prepares a new one
    in its place, and the closed one's text stops counting against MAX_KEPT_CHARS."""
    sql = "SELECT name FROM regions ORDER BY name"
    conn = await asyncpg.connect(demo_dsn)
    try:
        session = statements.Session()
        statements.claimed(session, "someone")
        kept = await statements.prepare(conn, session, sql, "someone")
        assert await statements.prepare(conn, session, sql, "someone") is kept  # reused while open
        kept.mark_closed()
        fresh = await statements.prepare(conn, session, sql, "someone")
        assert fresh is not kept and session.statements[sql] is fresh
        assert session.kept_chars == len(sql)
    finally:
        await conn.close()
