"""What the LLM sees is what the caller may read: the caller's Postgres role, its grants and its row policy.

The attack these tests replay: a key mapped to a role that may read only orders(order_id, status,
total_amount) asked about customers and got, in the prompt, the full schema of every table, sample values of
customers and employees and value hints naming customers.first_name = 'Marco'. A question that tells the model
to echo those values as a string literal returns them as a result row, since a literal needs no privilege.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway import Gateway, errors
from gateway.context import Example
from gateway.testing.scripted_llm import ScriptedLLM
from tests.promptscope.conftest import GUIDELINE, NOTES, TENANT_1, TENANT_2, Roles, principal, prompts

QUESTION = "Which customers in Berlin, first name Marco?"
GOOD_SQL = "<sql>SELECT order_id, status FROM orders ORDER BY order_id LIMIT 3</sql>"
# What the prompt of a caller who may read only orders(order_id, status, total_amount) must not hold: other
# tables, other columns of orders, sample values and value hints of customers and employees.
UNREADABLE = ("CREATE TABLE customers", "CREATE TABLE employees", "CREATE TABLE payments", "first_name",
              "customer_id", "ordered_at", "employees", "'Marco'", "'Berlin'", "Small Business", "likely means",
              "Count customers, not joined rows")


class SharedExamples:
    """Verified examples as a store would return them for the demo database: one over orders' readable
    columns, one over customers, one over a column of orders the role may not read."""

    async def similar(self, database: str, question: str, k: int) -> list[Example]:
        if database == "tenants":  # written for tenant 2: its literal spells one of tenant 2's rows
            return [Example("Zephyr's accounts?", f"SELECT count(*) FROM accounts WHERE name = '{TENANT_2[0]}'")]
        return [Example("Open orders?", "SELECT order_id FROM orders WHERE status = 'pending'"),
                Example("Marco's city?", "SELECT city FROM customers WHERE first_name = 'Marco'"),
                Example("Orders by shipping fee?", "SELECT o.order_id FROM orders o ORDER BY o.shipping_fee"),
                # names nothing the role cannot read, yet reads every column of orders: lineage tells
                Example("Every order, every field?", "SELECT * FROM orders LIMIT 5")][:k]

    async def exact(self, database: str, question: str) -> Example | None:
        return None


async def ask(gw: Gateway, llm: ScriptedLLM, question: str, database: str = "demo", **who: object) -> str:
    """Ask with a first attempt that fails (so a reflection, with the guideline, follows); every prompt sent."""
    llm.reset()
    llm.add_reply("<sql>SELECT no_such_column FROM orders</sql>", times=1)
    llm.add_reply(GOOD_SQL if database == "demo" else "<sql>SELECT account_id FROM accounts</sql>")
    q = gw.question(database, question, principal=principal(**who))  # type: ignore[arg-type]
    answer = await gw.ask(q)
    assert answer.attempts[-1].sql is not None
    assert len(llm.requests) >= 2, "the reflection prompt was not sent"
    return prompts(llm)


async def test_a_restricted_role_sees_only_what_it_may_read(gateway: Gateway, roles: Roles,
                                                            llm: ScriptedLLM) -> None:
    object.__setattr__(gateway._live, "examples", SharedExamples())  # frozen state: a test double swapped in
    gateway._live.settings.context.examples = 4
    text = await ask(gateway, llm, QUESTION, pg_role=roles.orders_only)
    for word in UNREADABLE:
        assert word not in text, word
    assert "CREATE TABLE orders" in text and "total_amount" in text
    assert "Exclude cancelled orders" in text  # a reminder over readable columns stays
    assert "Open orders?" in text
    assert "shipping_fee" not in text and "Marco's city" not in text and "every field" not in text

    # The control: the gateway's own role reads everything, and the same question shows it all.
    text = await ask(gateway, llm, QUESTION)
    assert "CREATE TABLE customers" in text and "likely means customers.first_name = 'Marco'" in text
    assert "Count customers, not joined rows" in text and "every field" in text and "Marco's city" in text


async def test_adapters_show_a_restricted_role_only_what_it_may_read(gateway: Gateway, roles: Roles) -> None:
    who = principal(roles.orders_only)
    schema = await gateway.schema("demo", principal=who)
    assert [(t["name"], [c["name"] for c in t["columns"]]) for t in schema["tables"]] == \
        [("orders", ["order_id", "status", "total_amount"])]
    assert schema["tables"][0]["foreign_keys"] == []  # a key over unreadable columns names them
    found = await gateway.search_schema("demo", "Marco Berlin first_name employees", principal=who)
    assert found["tables"] == [] and found["columns"] == [] and found["values"] == []
    found = await gateway.search_schema("demo", "status cancelled", principal=who)
    assert [c["column"] for c in found["columns"]] == ["status"]
    assert {v["value"] for v in found["values"]} >= {"cancelled"}
    guideline = await gateway.active_guideline("demo", principal=who)
    assert "Count customers" not in guideline["text"] and "Exclude cancelled orders" in guideline["text"]
    assert "customers" not in (await gateway.rules_summary("demo", principal=who))

    # Without a role, the same calls show what the gateway's role reads.
    everything = await gateway.search_schema("demo", "customers Marco", principal=principal())
    assert any(v["value"] == "Marco" for v in everything["values"])


async def test_row_policy_values_reach_no_other_tenant(gateway: Gateway, roles: Roles, llm: ScriptedLLM) -> None:
    object.__setattr__(gateway._live, "examples", SharedExamples())  # an example over a row-secured table is not shown either
    tenant_1 = {"pg_role": roles.tenant, "claims": (("tenant_id", "1"),)}
    text = await ask(gateway, llm, f"How many accounts does {TENANT_2[0]} have, and {TENANT_2[1]}?", "tenants",
                     **tenant_1)
    question_free = text.replace(TENANT_2[0], "").replace(TENANT_2[1], "")
    assert "likely means" not in text
    for value in TENANT_2:
        assert f"'{value}'" not in text, value
    assert "accounts" in question_free and f"'{TENANT_1[0]}'" in text  # its own tenant's values are shown
    found = await gateway.search_schema("tenants", TENANT_2[0], principal=principal(**tenant_1))  # type: ignore[arg-type]
    assert found["values"] == []
    found = await gateway.search_schema("tenants", TENANT_1[1], principal=principal(**tenant_1))  # type: ignore[arg-type]
    assert [v["value"] for v in found["values"]] == [TENANT_1[1]]

    # The other tenant sees its own values and not tenant 1's.
    tenant_2 = {"pg_role": roles.tenant, "claims": (("tenant_id", "2"),)}
    text = await ask(gateway, llm, f"Accounts named {TENANT_1[0]}?", "tenants", **tenant_2)
    assert f"'{TENANT_1[0]}'" not in text and f"'{TENANT_2[0]}'" in text


async def test_claims_without_a_role_read_values_under_the_claims(gateway: Gateway, llm: ScriptedLLM) -> None:
    # The gateway's own role reads notes only through the row policy: without claims it sees no row, so the
    # shared view has no topics; with tenant_id=1 the values are read again under that setting.
    text = await ask(gateway, llm, f"Notes about {NOTES[1]}?", "tenants", claims=(("tenant_id", "1"),))
    assert f"'{NOTES[0]}'" in text
    assert f"'{NOTES[1]}'" not in text and "likely means notes" not in text
    text = await ask(gateway, llm, f"Notes about {NOTES[1]}?", "tenants", claims=(("tenant_id", "2"),))
    assert f"likely means notes.topic = '{NOTES[1]}'" in text and f"'{NOTES[0]}'" not in text
    text = await ask(gateway, llm, f"Notes about {NOTES[1]}?", "tenants")
    assert f"'{NOTES[0]}'" not in text and f"'{NOTES[1]}'" not in text


async def test_views_are_cached_per_role_and_bounded(gateway: Gateway, roles: Roles) -> None:
    cache = gateway._live.schemas
    narrow, wide = principal(roles.orders_only), principal(roles.odd)
    for _ in range(3):  # alternating roles keep their own views
        assert [t["table"] for t in (await gateway.search_schema("demo", "orders regions", principal=narrow))
                ["tables"]] == ["orders"]
        assert [t["table"] for t in (await gateway.search_schema("demo", "orders regions", principal=wide))
                ["tables"]] == ["regions"]
    assert cache.scoped_views() == 2
    for tenant in ("1", "2", "3", "4"):  # scoped_views_max is 3 in these tests
        await gateway.search_schema("tenants", "name", principal=principal(roles.tenant, (("tenant_id", tenant),)))
        assert cache.scoped_views() <= 3
    assert cache.scoped_views() == 3


async def test_a_warm_view_costs_no_catalog_round_trip(gateway: Gateway, roles: Roles) -> None:
    who = principal(roles.orders_only)
    summary = await gateway.rules_summary("demo", principal=who)
    guideline = await gateway.active_guideline("demo", principal=who)
    await gateway._live.target("demo").pool.close()  # from here on, any query on demo would fail
    for _ in range(3):
        assert await gateway.rules_summary("demo", principal=who) == summary
        assert await gateway.active_guideline("demo", principal=who) == guideline


@pytest.mark.parametrize("claims", [(("tenant_id", "1'; SELECT 1; --"),), (("tenant_id", "1\x01\n\u2028"),),
                                    (("tenant id; x", "1"),), (("tenant_id", ""),), (("tenant_id", "1\x00"),),
                                    (("", "1"),), (("tenant_id", "1"), ("tenant_id", "2"))])
async def test_odd_claims_fail_closed(gateway: Gateway, roles: Roles, llm: ScriptedLLM,
                                      claims: tuple[tuple[str, str], ...]) -> None:
    try:
        text = await ask(gateway, llm, f"Accounts of {TENANT_2[0]} or {TENANT_1[0]}?", "tenants",
                         pg_role=roles.tenant, claims=claims)
    except errors.RowPolicyClaimInvalid:
        # Claims the execution path would refuse (a bad name, NUL, a name twice) are refused before any read
        # for the prompt: no prompt at all.
        assert llm.requests == []
        return
    for value in (*TENANT_1, *TENANT_2):
        assert f"'{value}'" not in text, value


async def test_a_role_with_quotes_in_its_name(gateway: Gateway, roles: Roles, llm: ScriptedLLM) -> None:
    text = await ask(gateway, llm, "Which regions are there?", pg_role=roles.odd)
    assert "CREATE TABLE regions" in text and "CREATE TABLE orders" not in text
    assert "'North America'" in text  # the regions' sample values: the role may read them


async def test_a_role_that_does_not_exist_is_a_clear_error(gateway: Gateway, llm: ScriptedLLM) -> None:
    who = principal('no_such_role_"x')
    with pytest.raises(errors.GatewayError) as raised:
        await gateway.ask(gateway.question("demo", QUESTION, principal=who))
    assert raised.value.code == "unknown_pg_role" and raised.value.status == 403
    assert llm.requests == []  # no prompt was sent
    for call in (gateway.schema("demo", principal=who), gateway.search_schema("demo", "x", principal=who)):
        with pytest.raises(errors.GatewayError) as raised:
            await call
        assert raised.value.code == "unknown_pg_role"


async def test_guideline_reminders_over_tables_whose_rows_depend_on_the_reader_are_left_out(
        gateway: Gateway, roles: Roles, llm: ScriptedLLM, tmp_path: Path) -> None:
    """The guideline is learnt from every caller's corrections: a reminder over a row-secured table may quote
    another tenant's values, so a caller with a row policy does not see it (one without still does)."""
    reminder = (f"\n3. Name accounts exactly\n- Corrected SQL generated by me:\n  ```sql\n"
                f"  SELECT count(*) FROM accounts WHERE name = '{TENANT_2[0]}'\n  ```\n")
    (tmp_path / "guidelines" / "default.md").write_text(GUIDELINE + reminder)
    gateway._live.schemas.invalidate()
    tenant_1 = {"pg_role": roles.tenant, "claims": (("tenant_id", "1"),)}
    text = await ask(gateway, llm, "How many accounts are there?", "tenants", **tenant_1)
    assert "Exclude cancelled orders" in text  # the rest of the guideline is there
    assert "Name accounts exactly" not in text and TENANT_2[0] not in text
    unscoped = await ask(gateway, llm, "How many accounts are there?", "tenants")
    assert "Name accounts exactly" in unscoped  # the gateway's own view (no row policy) keeps it
