"""The context stage on a generated mid-size schema (bench/schema_scale.py's generator): the right tables reach
the prompt within the budget, and schema changes reach it without a restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from bench.schema_scale import build_database, make_questions, make_tables
from gateway import errors
from gateway.context import build_context, estimate_tokens
from gateway.context.build import prepare
from gateway.context.cache import SchemaCache
from gateway.context.sources import FileGuidelineSource
from gateway.execute import Targets
from gateway.rules import RulesRegistry
from gateway.settings import ContextSettings, DatabaseSettings, Settings
from gateway.state import GatewayState

TABLES = 300
BUDGET = 4000


@pytest.fixture(scope="module")
def mid_size(pg) -> str:  # type: ignore[no-untyped-def]
    """A database of 300 generated tables (20 columns, comments, foreign keys, values), ANALYZEd."""
    return asyncio.run(build_database(pg.admin_dsn, "nl2sql_test_scale_mid", make_tables(TABLES)))


@pytest.fixture
async def open_state(tmp_path: Path) -> AsyncIterator[object]:
    opened: list[GatewayState] = []

    async def make(dsn: str, **context: object) -> GatewayState:
        (tmp_path / "rules").mkdir(exist_ok=True)
        settings = Settings(databases={"scale": DatabaseSettings(dsn=dsn, pool_max_size=4)},
                            context=ContextSettings(**context), rules_dir=tmp_path / "rules",
                            guidelines_dir=Path(__file__).resolve().parents[2] / "guidelines")
        targets = await Targets.open(settings)
        state = GatewayState(settings=settings, targets=targets, rules=RulesRegistry(tmp_path / "rules"),
                             schemas=SchemaCache(settings.context, prepare),
                             guidelines=FileGuidelineSource(settings.guidelines_dir))
        opened.append(state)
        return state

    yield make
    for state in opened:
        await state.schemas.close()
        await state.targets.close()


async def ask(state: GatewayState, question: str):  # type: ignore[no-untyped-def]
    return await build_context(state, state.settings.context, state.target("scale"), state.ruleset("scale"),
                               question, None)


async def test_recall_on_a_generated_mid_size_schema(mid_size: str, open_state) -> None:  # type: ignore[no-untyped-def]
    state = await open_state(mid_size, token_budget=BUDGET)
    questions = make_questions(make_tables(TABLES), 100)
    missed = []
    for q in questions:
        ctx = await ask(state, q.text)
        assert estimate_tokens(ctx.schema_text) <= BUDGET
        for table in ctx.tables:  # kept whole or compact, never cut
            assert f"CREATE TABLE {table} (" in ctx.schema_text and ctx.schema_text.count(f"TABLE {table} (") == 1
        if not q.expected <= set(ctx.tables):
            missed.append((q.kind, q.text, sorted(ctx.tables)[:5]))
    assert len(missed) <= len(questions) * 0.05, missed
    # each way of naming a table works on its own
    spaced = await ask(state, f"How many rows in {' '.join(map(str, make_tables(TABLES)[42].words))}?")
    assert make_tables(TABLES)[42].name in spaced.tables


async def test_spaced_words_and_numbers_find_the_table(mid_size: str, open_state) -> None:  # type: ignore[no-untyped-def]
    tables = make_tables(TABLES)
    state = await open_state(mid_size, token_budget=BUDGET)
    for table in tables[::37]:
        area, thing, number = table.words
        ctx = await ask(state, f"How many rows in {area} {thing} {number}?")
        assert table.name in ctx.tables
        # the best table comes first in score, so a tight budget still keeps it whole
        tight = await ask(state, f"How many rows are in {table.name}?")
        assert table.name in tight.tables


async def test_an_added_table_reaches_the_context_without_a_restart(fresh_db: str, open_state) -> None:  # type: ignore[no-untyped-def]
    conn = await asyncpg.connect(fresh_db)
    try:
        await conn.execute("CREATE TABLE orders (id int PRIMARY KEY, amount numeric)")
        # a long TTL: only the catalog version check can notice the new table
        state = await open_state(fresh_db, schema_ttl_s=3600, schema_check_s=0.05)
        before = await ask(state, "How many rows in the quokka sightings?")
        assert "quokka_sightings" not in before.tables
        await conn.execute("CREATE TABLE quokka_sightings (id int PRIMARY KEY, seen_at date)")
        for _ in range(600):  # a condition, not a duration: each question may start a check and a refresh
            ctx = await ask(state, "How many rows in the quokka sightings?")
            if "quokka_sightings" in ctx.tables:
                break
            await asyncio.sleep(0.05)
        assert "quokka_sightings" in ctx.tables and "CREATE TABLE quokka_sightings (" in ctx.schema_text
        # a comment edit is a change too
        await conn.execute("COMMENT ON TABLE quokka_sightings IS 'marsupial field notes'")
        for _ in range(600):
            ctx = await ask(state, "How many rows in the quokka sightings?")
            if "marsupial field notes" in ctx.schema_text:
                break
            await asyncio.sleep(0.05)
        assert "marsupial field notes" in ctx.schema_text
    finally:
        await conn.close()


async def test_no_check_without_schema_check(fresh_db: str, open_state) -> None:  # type: ignore[no-untyped-def]
    conn = await asyncpg.connect(fresh_db)
    try:
        await conn.execute("CREATE TABLE orders (id int PRIMARY KEY, amount numeric)")
        state = await open_state(fresh_db, schema_ttl_s=3600, schema_check_s=0)
        await ask(state, "orders")
        await conn.execute("CREATE TABLE quokka_sightings (id int PRIMARY KEY, seen_at date)")
        for _ in range(20):
            ctx = await ask(state, "How many rows in the quokka sightings?")
            await asyncio.sleep(0.01)
        assert "quokka_sightings" not in ctx.tables  # the snapshot stands until its TTL
        assert state.schemas.progress("scale")["state"] == "ready"
    finally:
        await conn.close()


async def test_readiness_progress_while_warming(mid_size: str, open_state) -> None:  # type: ignore[no-untyped-def]
    state = await open_state(mid_size, warm_start_tables=TABLES)
    assert state.schemas.progress("scale") == {"state": "not_loaded"}
    assert await state.schemas.warm([state.target("scale")], state.ruleset) == ["scale"]
    assert state.schemas.progress("scale")["state"] == "loading"
    await ask(state, "How many rows?")  # answered from the catalogs meanwhile; starts no other read
    assert "refresh" in state.schemas.progress("scale") or state.schemas.progress("scale")["state"] == "ready"
    await state.schemas.get(state.target("scale"), state.ruleset("scale"))  # without a question: waits
    done = state.schemas.progress("scale")
    assert done["state"] == "ready" and done["tables"] == TABLES


async def test_no_warm_start_below_the_table_threshold(mid_size: str, open_state) -> None:  # type: ignore[no-untyped-def]
    """A small database is read on its first question: nothing runs on its connections in the background."""
    state = await open_state(mid_size, warm_start_tables=TABLES + 1)
    assert await state.schemas.warm([state.target("scale")], state.ruleset) == []
    assert state.schemas.progress("scale") == {"state": "not_loaded"}
    ctx = await ask(state, "How many rows?")
    assert ctx.tables and state.schemas.progress("scale")["state"] == "ready"


async def test_no_warm_start_while_the_rules_are_not_served(mid_size: str, open_state, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Rules broken from the first start: the warm start reads nothing (questions are refused anyway) and
    the gateway still starts, failing closed on each question."""
    state = await open_state(mid_size, warm_start_tables=0)
    (tmp_path / "rules" / "scale.yaml").write_text("")
    with pytest.raises(errors.RulesUnavailable):
        state.ruleset("scale")
    assert await state.schemas.warm([state.target("scale")], state.ruleset) == []
    assert state.schemas.progress("scale") == {"state": "not_loaded"}


async def test_a_large_first_read_is_published_before_its_values(mid_size: str, open_state,  # type: ignore[no-untyped-def]
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema at or over PARTIAL_MIN_TABLES is answered from once introspected; the complete snapshot,
    with sample values, replaces it when the read ends (the next question sees it)."""
    from gateway.context import cache

    monkeypatch.setattr(cache, "PARTIAL_MIN_TABLES", TABLES)
    state = await open_state(mid_size, warm_start_tables=TABLES)
    target, rules = state.target("scale"), state.ruleset("scale")
    assert await state.schemas.warm([target], state.ruleset) == ["scale"]
    first = await state.schemas.get(target, rules)
    assert len(first.schema.tables) == TABLES
    assert first.partial == (not first.values)  # the partial snapshot has no values; the complete one has
    while state.schemas.progress("scale").get("values") == "loading" or "refresh" in state.schemas.progress("scale"):
        await asyncio.sleep(0.05)
    complete = await state.schemas.get(target, rules)
    assert not complete.partial and complete.values and len(complete.schema.tables) == TABLES
    if first.partial:  # replaced: its index (and every caller's view cut from it) is let go at once
        assert first.prepared is None
    assert state.schemas.progress("scale")["state"] == "ready" and "values" not in state.schemas.progress("scale")


async def test_a_question_before_the_first_read_ends_reads_only_its_tables(  # type: ignore[no-untyped-def]
        mid_size: str, open_state, tmp_path: Path) -> None:
    """A large database whose first read is held (before it introspects anything): a question is answered
    from the tables its words match in the catalogs, with the rules applied as on the whole schema: a hidden
    column the question names, and a hidden table it references, stay out of the prompt."""
    tables = make_tables(TABLES)
    table = next(t for t in tables[100:] if t.fks)
    area, thing, number = table.words
    secret = next(c for c, _ in table.columns if c != "id" and not c.endswith("_id"))
    hidden_table = table.fks[0]
    (tmp_path / "rules").mkdir(exist_ok=True)
    (tmp_path / "rules" / "scale.yaml").write_text(
        f"tables:\n  {table.name}:\n    columns:\n      {secret}: {{hidden: true}}\n  {hidden_table}: {{hidden: true}}\n")
    state = await open_state(mid_size, token_budget=BUDGET, warm_start_tables=TABLES)
    held = asyncio.Event()
    state.schemas.before_first_read = lambda name: held.wait()
    target, rules = state.target("scale"), state.ruleset("scale")
    assert await state.schemas.warm([target], state.ruleset) == ["scale"]

    ctx = await ask(state, f"How many rows in {area} {thing} {number} by {secret.replace('_', ' ')}?")
    assert state.schemas.progress("scale")["state"] == "loading"  # the whole read has not introspected yet
    assert table.name in ctx.tables
    assert len(ctx.tables) < TABLES
    block = ctx.schema_text.split(f"CREATE TABLE {table.name} (", 1)[1].split("\n)", 1)[0]
    assert f"  {secret} " not in block and "id bigint" in block
    assert hidden_table not in ctx.tables
    assert f"CREATE TABLE {hidden_table} (" not in ctx.schema_text
    assert f"REFERENCES {hidden_table}(" not in ctx.schema_text
    named = await ask(state, f"How many rows are in {hidden_table}?")  # spelled exactly: still not shown
    assert hidden_table not in named.tables and f"CREATE TABLE {hidden_table} (" not in named.schema_text
    assert state.schemas.progress("scale")["state"] == "loading"

    held.set()
    complete = await state.schemas.get(target, rules)  # no question: waits for the whole read
    assert len(complete.schema.tables) == TABLES
    again = await ask(state, f"How many rows in {area} {thing} {number}?")
    assert table.name in again.tables and hidden_table not in again.tables


def test_a_long_question_reads_the_catalogs_with_its_longest_words_only() -> None:
    """Every pattern is matched against every column of the database: a question of thousands of words is
    cut to the longest few, identifiers first, and words too short to mean anything are dropped."""
    from gateway.execute.candidates import MAX_PATTERNS, patterns

    found = patterns({f"w{i:04d}" for i in range(3000)} | {"ab", "account_asset_1341", "50%_off"})
    assert len(found) == MAX_PATTERNS
    assert "%account\\_asset\\_1341%" in found and "%50\\%\\_off%" in found
    assert "%ab%" not in found
    assert patterns({"ab", "x"}) == []


async def test_a_hidden_column_in_any_spelling_neither_matches_nor_ranks(  # type: ignore[no-untyped-def]
        mid_size: str, open_state, pg) -> None:
    """The rules may name a column of a ``public`` table with or without its schema: either way, its name and
    its comment do not bring its table into the catalog candidates."""
    from bench.schema_scale import READER
    from gateway.execute.candidates import candidate_schema

    state = await open_state(mid_size)
    target = state.target("scale")
    conn = await asyncpg.connect(pg.dsn("nl2sql_test_scale_mid"))
    try:
        await conn.execute("CREATE TABLE zz_probe_only (id int, qzxv_code text)")
        await conn.execute(f"GRANT SELECT ON zz_probe_only TO {READER}")
        await conn.execute("COMMENT ON COLUMN zz_probe_only.qzxv_code IS 'wqjk marker'")
        for word in ("qzxv", "wqjk"):
            shown = await candidate_schema(target, {word}, hidden_tables=frozenset(), hidden_columns=frozenset())
            assert [t.name for t in shown.tables] == ["zz_probe_only"], word  # the control: it does match
            for spelling in ("zz_probe_only.qzxv_code", "public.zz_probe_only.qzxv_code"):
                hidden = await candidate_schema(target, {word}, hidden_tables=frozenset(),
                                                hidden_columns=frozenset({spelling}))
                assert hidden.tables == [] or "zz_probe_only" not in [t.name for t in hidden.tables], spelling
    finally:
        await conn.execute("DROP TABLE IF EXISTS zz_probe_only")
        await conn.close()
