"""Wires the feedback store and MAGIC into an opening gateway (one line in `Gateway._open`).

With ``store.dsn`` set: opens (and migrates) the store, puts it on ``state.store``, replaces the guideline,
examples and corrections sources with store-backed ones (the file guideline stays the fallback), and starts
the regeneration scheduler when ``magic.schedule`` is on and an LLM is configured. Without a store nothing
changes: the gateway answers with the file guideline and no examples.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from gateway.magic import scheduler
from gateway.magic.run import refresh_gauges
from gateway.observability.logging import get_logger
from gateway.sql.client import allowed_now
from gateway.state import GatewayState
from gateway.store import Store
from gateway.store.sources import StoreCorrections, StoreExamples, StoreGuidelines

log = get_logger(__name__)


@asynccontextmanager
async def open_feedback_store(state: GatewayState) -> AsyncIterator[Store | None]:
    settings = state.settings
    if not settings.store.dsn:
        yield None
        return
    store = await Store.open(settings.store, apply_migrations=settings.store.migrate_on_start)
    state.store = store
    state.guidelines = StoreGuidelines(store, fallback=state.guidelines)
    # Approved examples are re-checked against the current rules at use (cached per policy).
    state.examples = StoreExamples(store, allowed=functools.partial(allowed_now, state))
    state.corrections = StoreCorrections(store)
    await refresh_gauges(store, settings.magic)
    task: asyncio.Task[None] | None = None
    if settings.magic.schedule and state.llm is not None and (settings.magic.model or settings.llm.model):
        task = asyncio.create_task(scheduler.loop(state, store), name="magic-scheduler")
    log.info("feedback_store_opened", scheduler=task is not None)
    try:
        yield store
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        state.store = None
        await store.close()
