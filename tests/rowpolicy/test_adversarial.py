"""Both modes against a caller who controls the claim values and writes the SQL (real Postgres)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from gateway import Gateway, errors
from gateway.auth.keys import Principal, Role
from gateway.execute.run import run_query
from gateway.pipeline import Question
from gateway.rules.loading import parse_file
from gateway.rules.row_filters import parse_row_filter, rewrite
from gateway.settings import StoreSettings
from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import script
from tests.ask.helpers import sql as llm_sql
from tests.auth.conftest import store_dsn  # noqa: F401 - a store database per module
from tests.rowpolicy.conftest import Tenants, settings, tenant

HOSTILE = ["'; DROP TABLE orders; --", "1' OR '1'='1", "\\' OR 1=1 --", "$$; SELECT 1; $$", "$x$ ' $x$",
           "ünïcödé 😀 \u202e", "E'\\x41'", "a" * 1024, "", " 1 ", "1\n;RESET ALL"]


@pytest.fixture
async def one_conn(tenants: Tenants, tmp_path: Path) -> Gateway:
    """A gateway whose pools hold one connection each: consecutive requests share the Postgres session."""
    async with Gateway(settings(tenants, tmp_path, pool_max_size=1)) as gateway:
        yield gateway  # type: ignore[misc]


@pytest.mark.parametrize("value", HOSTILE)
async def test_a_hostile_claim_value_reaches_postgres_as_exactly_that_text(one_conn: Gateway, value: str) -> None:
    target = one_conn._live.targets.by_name["rls"]
    out = await run_query(target, "SELECT current_setting('nl2sql.tenant_id', true)", claims=(("tenant_id", value),))
    assert out.rows[0][0] == value
    # the policy's cast refuses it (an error, never rows), except what reads as a tenant id or as nothing
    try:
        rows = (await one_conn.sql("rls", "SELECT count(*) FROM orders", principal=tenant(value))).result.rows
    except errors.QueryError:
        rows = None
    assert rows == {"": [[0]], "1": [[4]]}.get(value.strip())
    assert (await one_conn.sql("rls", "SELECT count(*) FROM orders", principal=tenant("1"))).result.rows == [[4]]


@pytest.mark.parametrize("value", ["1\x00", "a" * 1025])
async def test_values_that_cannot_be_set_are_refused(value: str) -> None:
    with pytest.raises(errors.RowPolicyClaimInvalid):
        tenant(value)


@pytest.mark.parametrize("name", ["Tenant", "tenant-id", "x.y", "1abc", "a b", "t'", "", "a" * 64, "é"])
def test_claim_names_outside_the_pattern_are_refused_when_the_principal_is_built(name: str) -> None:
    with pytest.raises(errors.RowPolicyClaimInvalid):
        Principal(name="p", role=Role.CLIENT, databases=frozenset(), claims=((name, "1"),))


async def test_a_missing_claim_matches_no_rows_with_the_documented_policy(one_conn: Gateway) -> None:
    """Never set (NULL) and set by an earlier request of the same pooled session ('' after it ended):
    the NULLIF form matches nothing in both cases, and no error."""
    nobody = tenant(None)
    assert (await one_conn.sql("rls", "SELECT count(*) FROM orders", principal=nobody)).result.rows == [[0]]
    assert (await one_conn.sql("rls", "SELECT count(*) FROM orders", principal=tenant("1"))).result.rows == [[4]]
    target = one_conn._live.targets.by_name["rls"]
    after = await run_query(target, "SELECT current_setting('nl2sql.tenant_id', true)")
    assert after.rows[0][0] in ("", None)  # what Postgres leaves of a transaction-local custom setting
    assert (await one_conn.sql("rls", "SELECT count(*) FROM orders", principal=nobody)).result.rows == [[0]]


async def test_the_session_reset_leaves_nothing_for_the_next_request(one_conn: Gateway) -> None:
    await one_conn.sql("rls", "SELECT count(*) FROM orders", principal=tenant("2", region="eu"))
    target = one_conn._live.targets.by_name["rls"]
    out = await run_query(target, "SELECT current_setting('nl2sql.tenant_id', true), "
                          "current_setting('nl2sql.region', true)")
    assert all(v in ("", None) for v in out.rows[0])


SETTERS = [
    "SELECT set_config('nl2sql.tenant_id', '2', false)",
    "SELECT pg_catalog.set_config('nl2sql.tenant_id', '2', true)",
    'SELECT "set_config"(\'nl2sql.tenant_id\', \'2\', true)',
    "SELECT SET_CONFIG('nl2sql.tenant_id', '2', true), count(*) FROM orders",
    "SELECT count(*) FROM orders WHERE set_config('nl2sql.tenant_id', '2', true) IS NOT NULL",
    "SELECT (SELECT set_config('nl2sql.tenant_id', '2', true)), count(*) FROM orders",
    "WITH s AS (SELECT set_config('nl2sql.tenant_id', '2', true)) SELECT count(*) FROM orders, s",
    "SELECT count(*) FROM orders o, LATERAL (SELECT set_config('nl2sql.tenant_id', '2', true)) x",
    "SELECT CASE WHEN set_config('nl2sql.tenant_id', '2', true) = '2' THEN 1 END",
    "SET nl2sql.tenant_id = '2'",
    "SET LOCAL nl2sql.tenant_id = 2",
    "SET SESSION nl2sql.tenant_id TO '2'",
    "RESET nl2sql.tenant_id",
    "RESET ALL",
    "DISCARD ALL",
    "SELECT 1; SET nl2sql.tenant_id = '2'",
    "SET ROLE NONE",
    "SELECT current_setting('nl2sql.tenant_id')",
    "SELECT setting FROM pg_settings WHERE name LIKE 'nl2sql.%'",
    "SELECT count(*) FROM orders WHERE tenant_id::text = current_setting('nl2sql.tenant_id')",
]


@pytest.mark.parametrize("sql", SETTERS)
@pytest.mark.parametrize("database", ["rls", "filters"])
async def test_client_sql_cannot_set_reset_or_read_the_settings(gw: Gateway, database: str, sql: str) -> None:
    with pytest.raises(errors.SqlBlocked):
        await gw.sql(database, sql, principal=tenant("1"))


async def test_nothing_a_tenant_1_statement_does_shows_tenant_2(gw: Gateway) -> None:
    """Reading by tenant 2's ids, through every join and both modes: no row of tenant 2."""
    for database in ("rls", "filters"):
        for sql in ("SELECT count(*) FROM orders WHERE tenant_id = 2 OR order_id >= 1000",
                    "SELECT count(*) FROM customers c RIGHT JOIN orders o ON o.customer_id = c.customer_id WHERE c.customer_id >= 1000",
                    "SELECT count(*) FROM order_items WHERE order_id IN (1010, 1011, 1012)"):
            assert (await gw.sql(database, sql, principal=tenant("1"))).result.rows == [[0]], (database, sql)


async def test_gateway_filters_refuse_a_missing_claim(gw: Gateway) -> None:
    with pytest.raises(errors.RowPolicyClaimMissing) as raised:
        await gw.sql("filters", "SELECT count(*) FROM orders", principal=tenant(None))
    assert raised.value.status == 403 and raised.value.extra["claim"] == "tenant_id"
    # a statement on unfiltered tables only needs no claim
    out = await gw.sql("filters", "SELECT count(*) FROM products", principal=tenant(None))
    assert out.result.rows == [[3]]


@pytest.mark.parametrize("value", ["1 OR true", "1; DROP TABLE orders", "1'", "0x1", "١", "1_0", "", "+"])
async def test_gateway_filters_bind_the_value_and_refuse_one_that_is_not_the_columns_type(
        gw: Gateway, value: str) -> None:
    with pytest.raises(errors.RowPolicyClaimInvalid):
        await gw.sql("filters", "SELECT count(*) FROM orders", principal=tenant(value))


# pglast's scanner counts characters, the parse tree bytes: 19 two-byte characters before `orders` made its
# location name the token `t.order_id`, whose 10 characters the edit took for the table's name, so the filter
# was spliced around `orders o,x` and applied to the CTE x while `orders o` stayed whole.
SPLICED = ("WITH x AS (SELECT 1 AS tenant_id) SELECT /*" + "é" * 19 + "*/ t.order_id, t.status FROM orders o,x t "
           "WHERE t.order_id > 0 AND t.order_id < 100000")


async def test_multibyte_text_before_a_filtered_table_cannot_move_the_filter(gw: Gateway) -> None:
    try:
        out = await gw.sql("filters", SPLICED, principal=tenant("1"))
    except errors.GatewayError:
        return  # refused or failed: either way nothing of tenant 2 came back
    assert all(row[0] < 1000 for row in out.result.rows), out.result.rows


def test_the_rewrite_places_the_filter_after_multibyte_text() -> None:
    f = parse_row_filter("orders", "tenant_id = {claim.tenant_id}")
    out = rewrite(SPLICED, {"orders": f}, {"tenant_id": "1"}, None)
    assert "FROM (SELECT * FROM orders AS nl2sql_rf WHERE (nl2sql_rf.tenant_id = $1) OFFSET 0) o,x t" in out.sql
    alias = rewrite('SELECT o.status AS "état" FROM orders o', {"orders": f}, {"tenant_id": "1"}, None)
    assert alias.sql == ('SELECT o.status AS "état" FROM (SELECT * FROM orders AS nl2sql_rf '
                         'WHERE (nl2sql_rf.tenant_id = $1) OFFSET 0) o')


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM customers WHERE customer_id >= 1000 AND to_date(name, 'Month') IS NULL",
    "SELECT count(*) FROM orders WHERE order_id >= 1000 AND to_date(status, 'Month') IS NULL",
    "SELECT o.order_id FROM orders o JOIN customers c USING (customer_id) "
    "WHERE c.customer_id >= 1000 AND to_timestamp(c.name, 'TZ') IS NULL",
])
async def test_a_condition_that_fails_never_runs_on_another_tenants_rows(gw: Gateway, sql: str) -> None:
    """Merged into the query, the filter and the client's equally cheap condition ran in the client's order:
    the cast ran on tenant 2's rows first and its error quoted their text."""
    for database in ("rls", "filters"):
        try:
            out = await gw.sql(database, sql, principal=tenant("1"))
        except errors.QueryError as exc:
            raise AssertionError(f"{database}: {exc}") from None
        assert out.result.rows in ([[0]], []), (database, out.result.rows)


def test_the_value_is_never_spliced_into_the_text() -> None:
    f = parse_row_filter("orders", "tenant_id = {claim.tenant_id}")
    value = "1) UNION SELECT * FROM orders --"
    out = rewrite("SELECT * FROM orders", {"orders": f}, {"tenant_id": value}, None)
    assert value not in out.sql and out.args == (value,)


async def test_check_reports_the_text_that_would_run(gw: Gateway) -> None:
    await gw.sql("filters", "SELECT 1 FROM products", principal=tenant("1"))  # the relations are loaded
    view = gw.check("SELECT o.order_id FROM orders o", "filters", principal=tenant("1"))
    assert view["allowed"]
    assert view["executed_sql"] == ("SELECT o.order_id FROM (SELECT * FROM orders AS nl2sql_rf "
                                    "WHERE (nl2sql_rf.tenant_id = $1) OFFSET 0) o")
    assert "executed_sql" not in gw.check("SELECT o.order_id FROM orders o", "rls", principal=tenant("1"))


def test_a_malformed_row_filter_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "db.yaml"
    path.write_text("tables:\n  orders:\n    description: x\n    row_filter: \"tenant_id = (SELECT 1)\"\n")
    parsed, problems = parse_file(path)
    assert parsed is None
    assert [(p.line, "SubLink" in p.message) for p in problems] == [(4, True)]


async def test_ask_runs_the_generated_sql_filtered(tenants: Tenants, tmp_path: Path, llm: ScriptedLLM) -> None:
    generated = "SELECT c.name, sum(o.amount) AS total FROM customers c JOIN orders o USING (customer_id) GROUP BY c.name"
    script(llm, llm_sql(generated))
    async with Gateway(settings(tenants, tmp_path, base_url=llm.base_url)) as gateway:
        answer = await gateway.ask(Question("filters", "revenue per customer", claims=tenant("1").claims))
    assert answer.chosen is not None and answer.chosen.sql == generated  # the trace shows the model's SQL
    rows = answer.chosen.result.rows if answer.chosen.result else []
    assert sorted(map(tuple, rows)) == [("alice", 350.0), ("bob", 75.5)] or \
        sorted((n, float(t)) for n, t in rows) == [("alice", 350.0), ("bob", 75.5)]


async def test_ask_without_the_claim_is_refused(tenants: Tenants, tmp_path: Path, llm: ScriptedLLM) -> None:
    script(llm, llm_sql("SELECT count(*) FROM orders"))
    async with Gateway(settings(tenants, tmp_path, base_url=llm.base_url)) as gateway:
        with pytest.raises(errors.RowPolicyClaimMissing):
            await gateway.ask(Question("filters", "how many orders"))


async def test_no_prompt_shows_values_of_a_view_over_filtered_tables(tenants: Tenants, tmp_path: Path,
                                                                      llm: ScriptedLLM) -> None:
    """customer_orders is a view over customers and orders: its rows are every tenant's (the rules filter the
    tables, and the rewrite refuses to read the view), so its stored values are no hint for anyone."""
    script(llm, llm_sql("SELECT name FROM customers"))
    async with Gateway(settings(tenants, tmp_path, base_url=llm.base_url)) as gateway:
        await gateway.ask(Question("filters", "customer orders of dave", claims=tenant("1").claims))
    [prompt] = [r.text.replace("customer orders of dave", "") for r in llm.requests]
    assert "customer_orders" in prompt  # the view is shown, without its values
    assert "TENANT2" not in prompt and "'bob'" not in prompt, prompt


async def test_a_child_of_a_filtered_table_without_a_filter_of_its_own_is_refused(tenants: Tenants,
                                                                                   tmp_path: Path) -> None:
    """events_archive INHERITS (events): read through events it is filtered; read directly it needs a filter
    of its own. Without one it is refused, never read whole."""
    config = settings(tenants, tmp_path)
    (tmp_path / "filters.yaml").write_text(
        (tmp_path / "filters.yaml").read_text().replace('  events_archive: {row_filter: "tenant_id = {claim.tenant_id}"}\n', ""))
    async with Gateway(config) as gateway:
        with pytest.raises(errors.SqlBlocked) as refused:
            await gateway.sql("filters", "SELECT label FROM events_archive", principal=tenant("1"))
        assert "row_filter_unenforceable" in refused.value.extra["codes"]
        assert "inherits from public.events" in str(refused.value.extra["findings"])
        through_parent = await gateway.sql("filters", "SELECT label FROM events ORDER BY 1", principal=tenant("1"))
        assert [r[0] for r in through_parent.result.rows] == ["login", "old login"]



@pytest.mark.parametrize("corrected", [
    "SELECT to_date(name, 'Month') FROM customers WHERE customer_id = 1001",  # quoted a name of tenant 2
    "SELECT 1 / (count(*) - 1) FROM customers WHERE name LIKE 'TENANT2 d%'",  # told one exists
])
async def test_a_corrected_sql_runs_with_the_callers_row_policy(tenants: Tenants, tmp_path: Path, llm: ScriptedLLM,
                                                                store_dsn: str, corrected: str) -> None:  # noqa: F811
    """Feedback runs its corrected SQL to prove it executes; unfiltered, it read every tenant's rows and its
    error told tenant 1 about them. Filtered, neither statement sees a row of tenant 2, so both run."""
    script(llm, llm_sql("SELECT count(*) FROM orders"))
    config = settings(tenants, tmp_path, base_url=llm.base_url)
    config.store = StoreSettings(dsn=store_dsn)
    alice = tenant("1")
    async with Gateway(config) as gateway:
        answer = await gateway.answer(Question("filters", "how many orders", request_id=uuid.uuid4().hex,
                                               client=alice.owner, end_user=alice.user, claims=alice.claims))
        assert answer.request_id
        stored, new = await gateway.feedback(answer.request_id, "incorrect", corrected_sql=corrected,
                                             principal=alice)
    assert new and stored.corrected_sql == corrected


COSTLY = "SELECT a.name FROM products a JOIN products b ON a.price < b.price JOIN products c ON b.price < c.price"


@pytest.mark.parametrize("database", ["rls", "filters"])
async def test_planner_estimates_are_not_shown_to_a_caller_under_a_row_policy(tenants: Tenants, tmp_path: Path,
                                                                               database: str) -> None:
    """The planner's statistics cover every tenant's rows: an estimated row count for `WHERE name = 'x'`
    tells whether another tenant holds x. EXPLAIN is refused, and cost_too_high names the limit only."""
    config = settings(tenants, tmp_path)
    for db in config.databases.values():
        db.limits.max_plan_rows = 1
    async with Gateway(config) as gateway:
        with pytest.raises(errors.SqlBlocked) as refused:
            await gateway.sql(database, "EXPLAIN SELECT name FROM customers WHERE name = 'TENANT2 dave'",
                              principal=tenant("1"))
        assert "row_filter_unenforceable" in refused.value.extra["codes"]
        with pytest.raises(errors.CostTooHigh) as costly:
            await gateway.sql(database, COSTLY, principal=tenant("1"))
        assert "estimated_rows" not in costly.value.extra and "estimated_cost" not in costly.value.extra
        assert "max_plan_rows" in costly.value.detail and not any(ch.isdigit() for ch in costly.value.detail.split(
            "beyond")[1].split(";")[0])
        # Without a row policy (the gateway's own callers) the estimates stay, to help size the limits.
        with pytest.raises(errors.CostTooHigh) as plain:
            await gateway.sql(database, COSTLY)
        assert "estimated_rows" in plain.value.extra
