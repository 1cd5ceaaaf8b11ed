"""Templates under row policies and Postgres roles (adversarial): a parameter value never widens what a
caller reads, suggestions never spell a value the caller could not read, and a template that reads what the
caller may not read does not exist for it (neither listed, matched nor run)."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from gateway import Gateway, errors
from gateway.auth.keys import Principal, Role
from gateway.settings import StoreSettings
from tests.rowpolicy.conftest import Tenants, settings, tenant

ORDERS = {
    "name": "orders_in_status", "sql": "SELECT count(*) AS n, sum(amount) AS total FROM orders WHERE status = $1",
    "parameters": [{"name": "status", "column": "orders.status", "default": "shipped"}],
    "questions": ["How many orders are {status}?"],
}


def rows(answer: Any) -> list[list[Any]]:
    return answer.as_dict()["rows"]


@pytest.mark.parametrize("database", ["rls", "filters"])
async def test_a_value_never_widens_access(tenants: Tenants, fresh_db: str, tmp_path: Path, database: str) -> None:
    config = settings(tenants, tmp_path)
    config.store = StoreSettings(dsn=fresh_db)
    alice, dave = tenant("1"), tenant("2")
    async with Gateway(config) as gw:
        await gw.create_template(database, **ORDERS)  # by the admin, who sees no tenant's rows
        mine = await gw.run_template("orders_in_status", {"status": "shipped"}, principal=alice)
        assert mine.trusted is not None and rows(mine) == [[2, "175.50"]]
        theirs = await gw.run_template("orders_in_status", {"status": "shipped"}, principal=dave)
        assert rows(theirs) == [[1, "9300.00"]]
        # Asked in words: the same template, under the asker's rows.
        asked = await gw.ask(gw.question(database, "how many orders are shipped", principal=alice))
        assert asked.trusted == {"template": "orders_in_status", "parameters": {"status": "shipped"},
                                 "run": "/v1/templates/orders_in_status/run"} and rows(asked) == [[2, "175.50"]]
        # Another tenant's value, or SQL in a value: a bound parameter, never more rows.
        for value in ("TENANT2 shipped", "shipped' OR '1'='1", "x' OR tenant_id = 2 OR status = 'x"):
            try:
                answer = await gw.run_template("orders_in_status", {"status": value}, principal=alice)
            except errors.TemplateValueInvalid as exc:  # rls: the value is not in alice's domain
                assert database == "rls"
                assert not any("TENANT2" in s for s in exc.extra["suggestions"]), exc.extra
                assert set(exc.extra["suggestions"]) <= {"shipped", "open", "cancelled"}
            else:
                assert rows(answer) == [[0, None]], value
        # A caller under a row policy is shown no defaults (a DBA's default may spell another tenant's value),
        # and on the RLS database only the values it may read.
        listed = await gw.templates(database, principal=alice)
        assert listed[0]["starter"] is None and "default" not in listed[0]["parameters"][0]
        assert not any("TENANT2" in v for v in listed[0]["parameters"][0].get("values", []))


async def test_hidden_columns_are_refused_at_creation(tenants: Tenants, fresh_db: str, tmp_path: Path) -> None:
    config = settings(tenants, tmp_path)
    config.store = StoreSettings(dsn=fresh_db)
    async with Gateway(config) as gw:
        for database in ("rls", "filters"):
            with pytest.raises(errors.TemplateInvalid, match="hidden_column"):
                await gw.create_template(database, "ssn_of", sql="SELECT ssn FROM customers WHERE name = $1",
                                         parameters=[{"name": "who", "column": "customers.name", "default": "alice"}],
                                         questions=["What is the ssn of {who}?"])
            with pytest.raises(errors.TemplateInvalid, match="no readable column"):
                await gw.create_template(database, "by_ssn", sql="SELECT count(*) FROM customers WHERE name = $1",
                                         parameters=[{"name": "ssn", "column": "customers.ssn", "default": "1"}],
                                         questions=["Who has ssn {ssn}?"])


async def test_a_template_reading_a_column_the_role_may_not_read_does_not_exist_for_it(
        tenants: Tenants, fresh_db: str, tmp_path: Path) -> None:
    limited = f"rp_lim_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(tenants.rls_admin)
    try:
        await admin.execute(f"CREATE ROLE {limited} NOLOGIN; GRANT {limited} TO {tenants.reader}; "
                            f"GRANT USAGE ON SCHEMA public TO {limited}; "
                            f"GRANT SELECT (order_id, tenant_id, status) ON orders TO {limited}")
        config = settings(tenants, tmp_path)
        config.store = StoreSettings(dsn=fresh_db)
        bob = Principal(name="bob", role=Role.CLIENT, databases=frozenset({"rls"}), user="bob",
                        pg_role=limited, claims=(("tenant_id", "1"),))
        async with Gateway(config) as gw:
            await gw.create_template("rls", **ORDERS)  # reads amount, which bob's role may not
            await gw.create_template("rls", "count_in_status", sql="SELECT count(*) AS n FROM orders WHERE status = $1",
                                     parameters=[{"name": "status", "column": "orders.status", "default": "shipped"}],
                                     questions=["Count the orders that are {status}"])
            assert [t["name"] for t in await gw.templates("rls", principal=bob)] == ["count_in_status"]
            for call in (gw.template("orders_in_status", principal=bob),
                         gw.run_template("orders_in_status", {"status": "shipped"}, principal=bob)):
                with pytest.raises(errors.UnknownTemplate):
                    await call
            counted = await gw.run_template("count_in_status", {"status": "open"}, principal=bob)
            assert rows(counted) == [[1]]
            # Without claims, under a role that row-level security applies to: still no default shown (the
            # DBA's value may name a row this reader cannot see); the dba sees it.
            carl = Principal(name="carl", role=Role.CLIENT, databases=frozenset({"rls"}), pg_role=limited)
            [shown] = await gw.templates("rls", principal=carl)
            assert shown["starter"] is None and "default" not in shown["parameters"][0]
            dba_view = await gw.template("count_in_status")
            assert dba_view["parameters"][0]["default"] == "shipped"
            # Asked in words, the unreadable template is not a candidate (and there is no LLM to fall back to).
            with pytest.raises(errors.LLMNotConfigured):
                await gw.ask(gw.question("rls", "How many orders are shipped?", principal=bob))
    finally:
        await admin.execute(f"DROP OWNED BY {limited}; DROP ROLE {limited}")
        await admin.close()


@pytest.mark.parametrize("database", ["rls", "filters"])
async def test_a_default_is_never_used_for_a_caller_it_is_not_shown_to(tenants: Tenants, fresh_db: str,
                                                                       tmp_path: Path, database: str) -> None:
    config = settings(tenants, tmp_path)
    config.store = StoreSettings(dsn=fresh_db)
    secret = "TENANT2 secret status"
    async with Gateway(config) as gw:
        await gw.create_template(database, **{**ORDERS, "parameters": [
            {"name": "status", "column": "orders.status", "default": secret}]})
        # Run without a value: the default would come back in the answer, or quoted in the refusal.
        with pytest.raises(errors.TemplateValueInvalid) as refused:
            await gw.run_template("orders_in_status", {}, principal=tenant("1"))
        assert "needs a value" in refused.value.detail and secret not in str(refused.value.extra)
        assert refused.value.extra["value"] is None
        # A tenant's dba reads no suggestions: they come from every tenant's questions.
        tenant_dba = dataclasses.replace(tenant("1"), role=Role.DBA)
        with pytest.raises(errors.Forbidden, match="row policy"):
            await gw.template_suggestions(database, principal=tenant_dba)
        if database == "rls":  # the admin who wrote it still runs it with its default (row filters need claims)
            answer = await gw.run_template("orders_in_status", {})
            assert answer.trusted is not None and answer.trusted["parameters"] == {"status": secret}
