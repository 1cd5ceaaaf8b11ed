"""Repositories against a real, migrated store."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from gateway.store import Store, audit, corrections, examples, feedback, guidelines


async def test_similar_examples_rank_by_trigram_similarity_within_one_database(store: Store) -> None:
    db = store.pool
    await examples.add(db, database="demo", question="How many orders were cancelled?",
                       sql="SELECT count(*) FROM orders WHERE status = 'cancelled'", source="feedback",
                       approved_by="key:dba")
    await examples.add(db, database="demo", question="Total revenue per region", sql="SELECT 1", source="dba")
    await examples.add(db, database="demo", question="List employees hired in 2020", sql="SELECT 2", source="dba")
    await examples.add(db, database="other", question="How many orders were cancelled", sql="SELECT 3",
                       source="dba")
    found = await examples.similar(db, "demo", "how many cancelled orders are there", 2)
    assert [e.sql for e in found][0] == "SELECT count(*) FROM orders WHERE status = 'cancelled'"
    assert all(e.database == "demo" for e in found)
    assert found[0].score > (found[1].score if len(found) > 1 else 0)
    assert await examples.similar(db, "demo", "zzzz qqqq", 3) == []


async def test_exact_match_ignores_case_spacing_and_final_punctuation(store: Store) -> None:
    db = store.pool
    first = await examples.add(db, database="demo", question="How many customers?", sql="SELECT 1", source="dba")
    again = await examples.add(db, database="demo", question="how many  customers", sql="SELECT 1", source="dba")
    assert first == again  # the same pair is stored once
    hit = await examples.exact(db, "demo", "  HOW many customers ?")
    assert hit is not None and hit.sql == "SELECT 1"
    assert await examples.exact(db, "demo", "how many customers in 2020") is None
    assert await examples.exact(db, "other", "how many customers") is None


async def test_only_approved_examples_are_found_and_reviews_follow_the_allowed_moves(store: Store) -> None:
    db = store.pool
    await audit.record(db, audit.AuditEntry("r9", "demo", "How many regions?", "ok", final_sql="SELECT 0"))
    correction = await corrections.add(db, database="demo", question="How many regions?", incorrect_sql="SELECT 0",
                                       corrected_sql="SELECT 7", source="user", verified=True, request_id="r9")
    proposed = await examples.add(db, database="demo", question="How many regions?", sql="SELECT 7",
                                  source="correction", request_id="r9", proposed_by="key:alice")
    assert await examples.exact(db, "demo", "how many regions") is None
    assert await examples.similar(db, "demo", "how many regions are there", 3) == []
    assert await corrections.unreviewed(db, [correction]) == [correction]

    approved = await examples.review(db, proposed, "approved", reviewer="key:dba", note="matches the table")
    assert approved is not None and (approved.status, approved.reviewed_by) == ("approved", "key:dba")
    assert approved.proposed_by == "key:alice" and approved.review_note == "matches the table"
    assert (await examples.exact(db, "demo", "How many regions?")) is not None
    assert await corrections.unreviewed(db, [correction]) == []  # the correction behind it is reviewed too
    assert await examples.review(db, proposed, "approved", reviewer="key:dba") is None  # already approved

    withdrawn = await examples.review(db, proposed, "rejected", reviewer="key:dba", note="wrong after all")
    assert withdrawn is not None and withdrawn.status == "rejected"
    assert await examples.exact(db, "demo", "How many regions?") is None
    row = await db.fetchrow("SELECT outcome, reviewed_at FROM corrections WHERE id = $1", correction)
    assert (row["outcome"], row["reviewed_at"]) == ("rejected", None)  # out of MAGIC's queue
    assert await examples.review(db, proposed, "approved", reviewer="key:dba") is None  # rejected stays so
    assert await examples.review(db, proposed, "rejected", reviewer="key:dba") is None
    # A reviewer sending the same rejected pair again does not revive it.
    await examples.add(db, database="demo", question="how many regions", sql="SELECT 7", source="feedback",
                       approved_by="key:other-dba")
    assert (await examples.get(db, proposed)).status == "rejected"  # type: ignore[union-attr]
    assert await examples.review(db, 10**9, "approved", reviewer="key:dba") is None


async def test_feedback_is_unique_per_request_and_client(store: Store) -> None:
    db = store.pool
    await audit.record(db, audit.AuditEntry("r1", "demo", "q", "ok", final_sql="SELECT 1"))
    made = await feedback.insert(db, request_id="r1", client_id="a", verdict="correct", corrected_sql=None,
                                 note=None, correction_id=None, example_id=None)
    dup = await feedback.insert(db, request_id="r1", client_id="a", verdict="incorrect", corrected_sql=None,
                                note=None, correction_id=None, example_id=None)
    other = await feedback.insert(db, request_id="r1", client_id="b", verdict="incorrect", corrected_sql=None,
                                  note=None, correction_id=None, example_id=None)
    assert made is not None and dup is None and other is not None
    assert (await feedback.get(db, "r1", "a")).verdict == "correct"  # type: ignore[union-attr]
    assert await feedback.accuracy_by_database(db) == {"demo": (1, 2)}
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await feedback.insert(db, request_id="nope", client_id="a", verdict="correct", corrected_sql=None,
                              note=None, correction_id=None, example_id=None)


async def test_pending_corrections_respect_verified_only_and_processing(store: Store) -> None:
    db = store.pool
    a = await corrections.add(db, database="demo", question="q1", incorrect_sql="SELECT 1", corrected_sql="SELECT 2",
                              source="user", verified=True)
    b = await corrections.add(db, database="demo", question="q2", incorrect_sql="SELECT 1", corrected_sql="SELECT 2",
                              source="reflection", verified=False, request_id="r9")
    assert [c.id for c in await corrections.pending(db, verified_only=True, limit=10)] == [a]
    assert [c.id for c in await corrections.pending(db, verified_only=False, limit=10)] == [a, b]
    assert await corrections.verify_for_request(db, "r9", "SELECT 2") == 1
    await corrections.mark_processed(db, a, "holdout")
    assert [c.id for c in await corrections.pending(db, verified_only=True, limit=10)] == [b]
    assert [c.id for c in await corrections.holdout(db, limit=10)] == [a]


async def test_activation_keeps_exactly_one_active_even_when_racing(store: Store) -> None:
    async with store.transaction() as conn:
        versions = [await guidelines.add_candidate(conn, text=f"g{i}", parent=None, provenance={}) for i in range(6)]
    await guidelines.activate(store.pool, versions[0])
    results = await asyncio.gather(*(guidelines.activate(store.pool, v) for v in versions[1:]))
    assert all(r is not None and r.status == "active" for r in results)
    statuses = {g.version: g.status for g in await guidelines.list_all(store.pool)}
    assert list(statuses.values()).count("active") == 1
    assert statuses[versions[0]] == "retired"
    assert await guidelines.activate(store.pool, 999) is None


async def test_the_database_refuses_a_second_active_version(store: Store) -> None:
    async with store.transaction() as conn:
        a = await guidelines.add_candidate(conn, text="a", parent=None, provenance={})
        b = await guidelines.add_candidate(conn, text="b", parent=None, provenance={})
    await guidelines.activate(store.pool, a)
    with pytest.raises(asyncpg.UniqueViolationError):
        await store.pool.execute("UPDATE guideline_versions SET status = 'active' WHERE version = $1", b)


async def test_a_reused_request_id_does_not_replace_the_audited_answer(store: Store) -> None:
    """Clients may choose their request id (X-Request-Id). A second request under someone else's id must not
    overwrite that answer's audit row, which feedback (and a dba's approval) on the id would then apply to."""
    db = store.pool
    assert await audit.record(db, audit.AuditEntry("shared-id", "demo", "How many regions?", "ok",
                                                   final_sql="SELECT count(*) FROM regions"))
    assert not await audit.record(db, audit.AuditEntry("shared-id", "demo", "Drop me in", "ok",
                                                       final_sql="SELECT 'attacker'"))
    kept = await audit.get(db, "shared-id")
    assert kept is not None and kept.question == "How many regions?"
    assert kept.final_sql == "SELECT count(*) FROM regions"
