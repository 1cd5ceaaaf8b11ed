"""Group commit of the per-answer writes (gateway.store.batch) against the real store: concurrent rows go in
one statement, each request still gets its own outcome, and one row the database refuses fails only itself."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from gateway.store import Store, audit, conversations
from gateway.store.conversations import StoredConversation, StoredTurn


def entry(request_id: str, question: str = "How many regions?") -> audit.AuditEntry:
    return audit.AuditEntry(request_id, "demo", question, "ok", attempts=[{"n": 1, "sql": "SELECT 1"}],
                            final_sql="SELECT 1", timings={"total_ms": 1.5}, guideline_version="3")


async def test_concurrent_audit_rows_are_written_together_each_with_its_outcome(store: Store) -> None:
    assert await audit.record(store.pool, entry("taken", "the first answer"))
    entries = [entry(f"r{i}") for i in range(20)] + [entry("taken", "a later answer"),
                                                     entry("twice", "first"), entry("twice", "second")]
    outcomes = await asyncio.gather(*(audit.record_batched(store, e) for e in entries))
    assert outcomes == [True] * 20 + [False, True, False]  # as if written one after another
    assert store.batchers["audit"].batches >= 1  # at least one statement carried several rows
    assert await store.pool.fetchval("SELECT count(*) FROM request_audit") == 22
    stored = await audit.get(store.pool, "r7")
    assert stored is not None and stored.attempts == [{"n": 1, "sql": "SELECT 1"}] and stored.final_sql == "SELECT 1"
    assert stored.timings == {"total_ms": 1.5} and stored.guideline_version == "3" and stored.evidence == ""
    assert (await audit.get(store.pool, "taken")).question == "the first answer"  # type: ignore[union-attr]
    assert (await audit.get(store.pool, "twice")).question == "first"  # type: ignore[union-attr]


async def test_a_row_the_database_refuses_fails_only_its_own_request(store: Store) -> None:
    entries = [entry(f"ok{i}") for i in range(5)] + [entry("bad", "a NUL \x00 byte")]
    outcomes = await asyncio.gather(*(audit.record_batched(store, e) for e in entries), return_exceptions=True)
    assert outcomes[:5] == [True] * 5
    assert isinstance(outcomes[5], (asyncpg.PostgresError, ValueError))  # what the single write raises
    assert await store.pool.fetchval("SELECT count(*) FROM request_audit") == 5


async def test_new_conversations_first_turns_are_written_together(store: Store) -> None:
    owner = StoredConversation("c_taken", "client-a", "demo")
    async with store.transaction() as conn:
        await conversations.add_turn(conn, owner, StoredTurn(0, "r0", "first question", "ok"))
    fresh = [StoredConversation(f"c_{i}", "client-b", "demo") for i in range(10)]
    turns = [StoredTurn(0, f"r{i}", f"question {i}", "ok", sql="SELECT 1", columns=[{"name": "x", "type": "int4"}],
                        row_count=1) for i in range(10)]
    ns = await asyncio.gather(*(conversations.add_first_turn(store, c, t, 30.0) for c, t in zip(fresh, turns, strict=True)))
    assert ns == [1] * 10 and store.batchers["first_turns"].batches >= 1
    stored = await conversations.turns(store.pool, "c_4")
    assert [(t.n, t.question, t.sql, t.columns, t.row_count, t.truncated, t.clarification) for t in stored] == \
        [(1, "question 4", "SELECT 1", [{"name": "x", "type": "int4"}], 1, False, None)]
    assert await conversations.get(store.pool, "c_4", "client-b", 30.0) is not None
    # An id that exists already (a bug of ours) goes the single way, which checks the owner.
    taken = [conversations.add_first_turn(store, StoredConversation("c_taken", "client-b", "demo"),
                                          StoredTurn(0, "rx", "not mine", "ok"), 30.0),
             conversations.add_first_turn(store, StoredConversation("c_new", "client-b", "demo"),
                                          StoredTurn(0, "ry", "mine", "ok"), 30.0)]
    outcomes = await asyncio.gather(*taken, return_exceptions=True)
    assert isinstance(outcomes[0], ValueError) and outcomes[1] == 1
    assert [t.question for t in await conversations.turns(store.pool, "c_taken")] == ["first question"]


async def test_expired_conversations_are_purged_when_new_ones_start(store: Store) -> None:
    async with store.transaction() as conn:
        await conversations.add_turn(conn, StoredConversation("c_old", "a", "demo"), StoredTurn(0, None, "q", "ok"))
        await conn.execute("UPDATE conversations SET last_turn_at = now() - interval '40 days'")
    await asyncio.gather(*(conversations.add_first_turn(store, StoredConversation(f"c_{i}", "a", "demo"),
                                                        StoredTurn(0, None, "q", "ok"), 30.0) for i in range(3)))
    assert await store.pool.fetchval("SELECT count(*) FROM conversations WHERE id = 'c_old'") == 0


@pytest.mark.parametrize("n", [1, 2])
async def test_a_batch_of_one_or_two_answers_like_the_single_write(store: Store, n: int) -> None:
    outcomes = await asyncio.gather(*(audit.record_batched(store, entry(f"s{i}")) for i in range(n)))
    assert outcomes == [True] * n


async def test_the_batch_runs_outside_the_first_requests_log_context() -> None:
    """The batch writes everyone's rows: what it logs must not carry the request id of whoever started it."""
    import structlog

    from gateway.store.batch import Batcher

    seen: list[dict[str, object]] = []

    async def write(items: list[int]) -> list[int]:
        seen.append(structlog.contextvars.get_contextvars())
        return items

    async def write_one(item: int) -> int:
        return (await write([item]))[0]

    batcher: Batcher[int, int] = Batcher(write, write_one)
    structlog.contextvars.bind_contextvars(request_id="first-request")
    try:
        assert await batcher.submit(1) == 1
    finally:
        structlog.contextvars.clear_contextvars()
    assert seen == [{}]
