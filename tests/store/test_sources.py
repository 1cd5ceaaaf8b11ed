"""The store behind the pipeline's protocols: guideline source with fallback, examples, corrections sink."""

from __future__ import annotations

from gateway.context.model import Guideline
from gateway.context.sources import ExamplesSource, GuidelineSource, NoExamples
from gateway.learning.corrections import Correction, CorrectionsSink
from gateway.settings import MagicSettings
from gateway.store import Store, corrections, examples, guidelines
from gateway.store.sources import StoreCorrections, StoreExamples, StoreGuidelines


class FileFallback:
    async def active(self, database: str) -> Guideline:
        return Guideline("default", "from the file")


async def test_active_guideline_comes_from_the_store_with_the_file_as_fallback(store: Store) -> None:
    source = StoreGuidelines(store, FileFallback(), ttl_s=60)
    assert isinstance(source, GuidelineSource)
    assert await source.active("demo") == Guideline("default", "from the file")
    async with store.transaction() as conn:
        v = await guidelines.add_candidate(conn, text="1. stored reminder", parent=None, provenance={})
    await guidelines.activate(store.pool, v)
    assert (await source.active("demo")).version == "default"  # cached for ttl_s...
    source.invalidate()  # ...unless this replica activated it
    assert await source.active("demo") == Guideline(f"v{v}", "1. stored reminder")


async def test_examples_source_similar_and_exact(store: Store) -> None:
    source = StoreExamples(store)
    assert isinstance(source, ExamplesSource) and isinstance(NoExamples(), ExamplesSource)
    await examples.add(store.pool, database="demo", question="How many orders were cancelled?",
                       sql="SELECT count(*) FROM orders WHERE status = 'cancelled'", source="feedback")
    assert await source.similar("demo", "how many cancelled orders", 3) == []  # proposed: not used yet
    assert await source.exact("demo", "How many orders were cancelled?") is None
    await examples.add(store.pool, database="demo", question="How many orders were cancelled?",
                       sql="SELECT count(*) FROM orders WHERE status = 'cancelled'", source="feedback",
                       approved_by="key:dba")
    (found,) = await source.similar("demo", "how many cancelled orders", 3)
    assert found.sql.endswith("'cancelled'")
    assert (await source.exact("demo", "HOW MANY ORDERS WERE CANCELLED")) == found
    assert await source.exact("demo", "how many orders were shipped?") is None
    # The policy check at use time (the gateway passes the current rules' verdict) can refuse a pair.
    refusing = StoreExamples(store, allowed=lambda database, sql: "cancelled" not in sql)
    assert await refusing.similar("demo", "how many cancelled orders", 3) == []
    assert await refusing.exact("demo", "HOW MANY ORDERS WERE CANCELLED") is None


async def test_reflection_corrections_are_stored_unverified_and_user_ones_verified(store: Store) -> None:
    sink = StoreCorrections(store)
    assert isinstance(sink, CorrectionsSink)
    await sink.record(Correction(question="q", evidence=None, database="demo", incorrect_sql="SELECT 1",
                                 corrected_sql="SELECT 2", request_id="r1"))
    await sink.record(Correction(question="q", evidence="hint", database="demo", incorrect_sql="SELECT 1",
                                 corrected_sql="SELECT 3", source="dba"))
    verified = MagicSettings().verified_only
    pending = await corrections.pending(store.pool, verified_only=verified, limit=10)
    everything = await corrections.pending(store.pool, verified_only=False, limit=10)
    assert [c.corrected_sql for c in pending] == ["SELECT 3"]
    assert [(c.source, c.verified, c.request_id) for c in everything] == [("reflection", False, "r1"),
                                                                          ("dba", True, None)]
