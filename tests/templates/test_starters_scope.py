"""Starters say nothing a caller may not read: a template whose default is a value of a table whose rows
depend on the reader is no starter, and a verified question whose SQL reads what the caller's Postgres role
may not (or a reader-dependent table) is not offered (found by the attacker's review)."""

from __future__ import annotations

import uuid
from pathlib import Path

import asyncpg

from gateway import Gateway
from gateway.auth.keys import Principal, Role
from gateway.settings import StoreSettings
from gateway.store import examples
from tests.rowpolicy.conftest import Tenants, settings

SECRET = "TENANT2 secret status"


async def test_starters_show_no_default_or_question_the_caller_may_not_read(tenants: Tenants, fresh_db: str,
                                                                          tmp_path: Path) -> None:
    limited = f"rp_lim_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(tenants.rls_admin)
    try:
        await admin.execute(f"CREATE ROLE {limited} NOLOGIN; GRANT {limited} TO {tenants.reader}; "
                            f"GRANT USAGE ON SCHEMA public TO {limited}; "
                            f"GRANT SELECT (order_id, tenant_id, status) ON orders TO {limited}")
        config = settings(tenants, tmp_path)
        config.store = StoreSettings(dsn=fresh_db)
        async with Gateway(config) as gw:
            for database in ("rls", "filters"):
                await gw.create_template(database, f"count_in_status_{database}",
                                         sql="SELECT count(*) AS n FROM orders WHERE status = $1",
                                         parameters=[{"name": "status", "column": "orders.status", "default": SECRET}],
                                         questions=["Count the orders that are {status}"])
            pool = await asyncpg.create_pool(fresh_db, min_size=1, max_size=1)
            try:
                await examples.add(pool, database="rls", question="What is the name of customer TENANT2 Dave Jones?",
                                   sql="SELECT name FROM customers WHERE name = 'TENANT2 Dave Jones'", source="dba")
            finally:
                await pool.close()
            carl = Principal(name="carl", role=Role.CLIENT, databases=frozenset({"rls"}), pg_role=limited)
            ann = Principal(name="ann", role=Role.CLIENT, databases=frozenset({"filters"}), key_id="k1")
            # the templates are usable (listed), only their defaults and the stored question are withheld
            assert [t["name"] for t in await gw.templates("rls", principal=carl)] == ["count_in_status_rls"]
            assert [t["name"] for t in await gw.templates("filters", principal=ann)] == ["count_in_status_filters"]
            for database, who in (("rls", carl), ("filters", ann)):
                shown = await gw.starters(database, principal=who)
                assert not any("TENANT2" in s["question"] for s in shown), (database, shown)
    finally:
        await admin.execute(f"DROP OWNED BY {limited}; DROP ROLE {limited}")
        await admin.close()
