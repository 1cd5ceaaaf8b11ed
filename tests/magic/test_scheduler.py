"""When the in-server scheduler starts a run: interval, threshold, nothing pending."""

from __future__ import annotations

from gateway.magic.scheduler import due
from gateway.settings import MagicSettings, StoreSettings
from gateway.store import Store, runs
from tests.magic.helpers import add_corrections


async def test_due_by_threshold_interval_or_not_at_all(fresh_db: str) -> None:
    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        settings = MagicSettings(min_new_corrections=3, interval_s=3600)
        assert await due(store, settings) is None  # nothing pending
        await add_corrections(store, [1])
        assert await due(store, settings) == "interval"  # never ran: the interval has passed
        run_id = await runs.start(store.pool, "test")
        await runs.finish(store.pool, run_id, outcome="no_change", counts={}, version=None)
        assert await due(store, settings) is None  # ran just now, below the threshold
        await add_corrections(store, [2, 3])
        assert await due(store, settings) == "threshold"
    finally:
        await store.close()


async def test_the_server_regenerates_on_its_own_when_enough_corrections_wait(
    demo_dsn: str, fresh_db: str, llm, tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    import asyncio

    from gateway.store import guidelines
    from tests.magic.helpers import MagicScript, gateway, settings_for

    MagicScript(llm)
    settings = settings_for(demo_dsn, fresh_db, llm, tmp_path, schedule=True, poll_s=0.1, min_new_corrections=10,
                            auto_activate=False)
    async with gateway(settings) as (_, state):
        assert state.store is not None
        await add_corrections(state.store, range(1, 11))
        for _ in range(1200):  # bounded (2 min), generous for a loaded machine
            versions = await guidelines.list_all(state.store.pool)
            if versions:
                break
            await asyncio.sleep(0.1)
        recent = await runs.recent(state.store.pool)
    assert [v.status for v in versions] == ["candidate"]
    assert recent[-1]["trigger"] == "threshold" and recent[-1]["outcome"] == "candidate"
