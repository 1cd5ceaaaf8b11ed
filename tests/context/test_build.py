"""build_context on the real demo database: secrecy, pruning, value matching, sources."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gateway.context import Example, Guideline, build_context, estimate_tokens
from gateway.context.values import ValueIndex, match_values

HIDING = """\
tables:
  employees:
    description: Staff; salary_band below is coarse on purpose.
    columns:
      salary: {hidden: true}
      email: {hidden: true}
  payments: {hidden: true}
instructions:
  - Never estimate employees.salary or read payments; say it is not available.
"""

HIDDEN_WORDS = ("salary", "payments", "paid_at")


async def context_for(state, database: str, question: str, evidence: str | None = None):  # type: ignore[no-untyped-def]
    """build_context with the parts a gateway's state holds for ``database``."""
    return await build_context(state, state.settings.context, state.target(database), state.ruleset(database),
                               question, evidence)


def everything(ctx) -> str:  # type: ignore[no-untyped-def]
    return "\n".join([ctx.schema_text, ctx.rules_text, ctx.guideline.text, ctx.value_hints_text,
                      *(f"{e.question} {e.sql}" for e in ctx.examples), *(str(h) for h in ctx.value_hints),
                      " ".join(ctx.tables)])


class LeakyExamples:
    async def similar(self, database: str, question: str, k: int) -> list[Example]:
        return [Example("Average salary per department?", "SELECT department, avg(salary) FROM employees"),
                Example("Orders per channel?", "SELECT channel, count(*) FROM orders GROUP BY channel")][:k]


class StoreGuideline:
    async def active(self, database: str) -> Guideline:
        return Guideline("v7", "1. Check payments.amount before using salary.")


async def test_hidden_objects_never_reach_the_context(make_state) -> None:  # type: ignore[no-untyped-def]
    state = dataclasses.replace(await make_state(HIDING), examples=LeakyExamples(), guidelines=StoreGuideline())
    questions = ["What is the average salary per department?",
                 "Total payments captured by payment method in 2024",
                 "Which employees in North America were hired in 2023, with their email and paid salary?"]
    for question in questions:
        for budget in (300, 4000):
            state.settings.context.token_budget = budget
            ctx = await context_for(state, "demo", question, evidence="salary means employees.salary")
            text = everything(ctx).lower()
            for word in HIDDEN_WORDS:
                assert not re.search(rf"\b{word}\b", text), (word, question, budget)
            assert "payments" not in ctx.tables
            assert all(h.table != "payments" and h.column not in {"salary", "email"} for h in ctx.value_hints)
    # visible columns of the same tables are still there, and so is the other table's email column
    assert "first_name" in ctx.schema_text and "customers" in ctx.tables
    assert re.search(r"^\s+email text", ctx.schema_text, re.MULTILINE)  # customers.email is not hidden here
    assert [e.question for e in ctx.examples] == ["Orders per channel?"]
    assert ctx.guideline.version == "v7" and "[hidden]" in ctx.guideline.text


async def test_whole_schema_when_it_fits(make_state) -> None:  # type: ignore[no-untyped-def]
    state = await make_state(token_budget=20_000)
    ctx = await context_for(state, "demo", "How many orders per channel?", None)
    assert set(ctx.tables) == {"categories", "customers", "employees", "events", "order_items", "orders",
                               "payments", "products", "regions"}
    assert "CREATE TABLE orders (" in ctx.schema_text
    assert "REFERENCES customers(customer_id)" in ctx.schema_text
    # a low-cardinality text column shows its values; a unique one does not
    assert re.search(r"channel text NOT NULL,.*values: .*'web'", ctx.schema_text)
    assert not re.search(r"  sku text .*(values|e\.g\.) '", ctx.schema_text)
    assert ctx.guideline.version == "default" and "ask-to-myself" in ctx.guideline.text
    assert ctx.token_estimate >= estimate_tokens(ctx.schema_text)


@pytest.mark.parametrize("question, must, must_not", [
    ("Total revenue per region in 2024", {"orders", "regions", "customers"}, {"events", "products"}),
    ("Which product categories sold the most units?", {"categories", "products", "order_items"}, {"events"}),
    ("How many add_to_cart events happened on mobile devices?", {"events"}, {"payments", "order_items"}),
    ("Refunded payments by method", {"payments"}, {"events", "categories"}),
])
async def test_pruning_keeps_what_the_question_needs(make_state, question, must, must_not) -> None:  # type: ignore[no-untyped-def]
    state = await make_state(token_budget=1200)
    ctx = await context_for(state, "demo", question, None)
    assert must <= set(ctx.tables), ctx.tables
    assert not (must_not & set(ctx.tables)), ctx.tables
    assert estimate_tokens(ctx.schema_text) <= 1200
    for table in ctx.tables:
        assert f"CREATE TABLE {table} (" in ctx.schema_text


async def test_pruning_stays_within_small_budgets(make_state) -> None:  # type: ignore[no-untyped-def]
    for budget in (200, 400, 800, 1600):
        state = await make_state(token_budget=budget)
        ctx = await context_for(state, "demo", "revenue per customer segment and region by channel", None)
        assert ctx.tables
        assert estimate_tokens(ctx.schema_text) <= budget or len(ctx.tables) == 1, (budget, ctx.tables)


@pytest.mark.parametrize("phrase", ["nord america", "NORTH AMERICA", "north amerika", "North-America"])
async def test_value_matching_finds_the_stored_literal(make_state, phrase: str) -> None:  # type: ignore[no-untyped-def]
    state = await make_state()
    ctx = await context_for(state, "demo", f"How many customers are in {phrase}?", None)
    best = ctx.value_hints[0]
    assert (best.table, best.column, best.value) == ("regions", "name", "North America"), ctx.value_hints
    assert "regions" in ctx.tables


async def test_value_matching_without_pg_trgm_uses_python(make_state) -> None:  # type: ignore[no-untyped-def]
    state = await make_state()
    target = state.target("demo")
    snapshot = await state.schemas.get(target, state.ruleset("demo"))
    assert snapshot.trgm_schema is not None  # the demo database has the extension
    for trgm in (snapshot.trgm_schema, None):
        hints = await match_values(target, trgm, ["nord america", "enterprize", "mobil"], snapshot.values, 0.45, 8)
        found = {(h.table, h.column, h.value) for h in hints}
        assert ("regions", "name", "North America") in found, (trgm, hints)
        assert ("customers", "segment", "Enterprise") in found, (trgm, hints)
        assert ("orders", "channel", "mobile") in found, (trgm, hints)


async def test_remembered_value_scores_are_the_fresh_ones(make_state) -> None:  # type: ignore[no-untyped-def]
    state = await make_state()
    target = state.target("demo")
    snapshot = await state.schemas.get(target, state.ruleset("demo"))
    index = ValueIndex.of(snapshot.values)
    await match_values(target, snapshot.trgm_schema, ["nord america", "enterprize"], index, 0.45, 8)
    assert ("nord america", 0.45) in index.scored and ("mobil", 0.45) not in index.scored
    # Known phrases in other positions next to a new one; another threshold is scored afresh.
    for phrases, threshold in ((["mobil", "enterprize", "nord america"], 0.45), (["nord america", "mobil"], 0.3)):
        remembered = await match_values(target, snapshot.trgm_schema, phrases, index, threshold, 8)
        fresh = await match_values(target, snapshot.trgm_schema, phrases, snapshot.values, threshold, 8)
        assert remembered == fresh and remembered, (phrases, remembered, fresh)
        assert all((p, threshold) in index.scored for p in phrases)


async def test_schema_cache_refreshes_after_its_ttl(make_state, demo_admin_dsn: str) -> None:  # type: ignore[no-untyped-def]
    state = await make_state(schema_ttl_s=3600)
    target = state.target("demo")
    first = await state.schemas.get(target, state.ruleset("demo"))
    assert await state.schemas.get(target, state.ruleset("demo")) is first  # cached
    state.schemas.settings = state.settings.context.model_copy(update={"schema_ttl_s": 1e-9})
    assert await state.schemas.get(target, state.ruleset("demo")) is not first


async def test_rule_edits_change_the_context_without_a_restart(make_state, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    state = await make_state("instructions: [Always answer in euros.]\n")
    ctx = await context_for(state, "demo", "average salary per department", None)
    assert "Always answer in euros." in ctx.rules_text and "salary numeric" in ctx.schema_text
    (state.settings.rules_dir / "demo.yaml").write_text(
        "instructions: [Round to whole dollars.]\ntables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
    ctx = await context_for(state, "demo", "average salary per department", None)
    assert "Round to whole dollars." in ctx.rules_text and "euros" not in ctx.rules_text
    assert "salary" not in ctx.schema_text
