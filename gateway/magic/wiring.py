"""Wires the feedback store and MAGIC into an opening gateway (`Gateway._open` uses the three parts).

With ``store.dsn`` set: opens (and migrates) the store, makes the store-backed guideline, examples and
corrections sources (the file guideline stays the fallback), and starts the regeneration scheduler when
``magic.schedule`` is on and an LLM is configured. Without a store nothing
changes: the gateway answers with the file guideline and no examples.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from gateway.context.sources import ExamplesSource, GuidelineSource
from gateway.learning.corrections import CorrectionsSink
from gateway.magic import scheduler
from gateway.magic.run import refresh_gauges
from gateway.observability.logging import get_logger
from gateway.pipeline.ports import Asking
from gateway.settings import Settings
from gateway.store import Store
from gateway.store.sources import StoreCorrections, StoreExamples, StoreGuidelines

log = get_logger(__name__)


@asynccontextmanager
async def open_feedback_store(settings: Settings) -> AsyncIterator[Store | None]:
    """The store (opened and migrated), or None without ``store.dsn``; closed on exit."""
    if not settings.store.dsn:
        yield None
        return
    store = await Store.open(settings.store, apply_migrations=settings.store.migrate_on_start)
    await refresh_gauges(store, settings.magic)
    try:
        yield store
    finally:
        await store.close()


def store_sources(store: Store, fallback: GuidelineSource, allowed: Callable[[str, str], bool]
                  ) -> tuple[GuidelineSource, ExamplesSource, CorrectionsSink]:
    """The store's guideline (the file one its fallback), approved examples and corrections sink.

    ``allowed(database, sql)``: approved examples are re-checked against the current rules at use.
    """
    return StoreGuidelines(store, fallback=fallback), StoreExamples(store, allowed=allowed), StoreCorrections(store)


@asynccontextmanager
async def run_scheduler(state: Asking) -> AsyncIterator[None]:
    """The regeneration scheduler, while the context is open, when ``magic.schedule`` is on and a store and an
    LLM are configured."""
    settings = state.settings
    store = state.store
    if store is None:
        yield
        return
    task: asyncio.Task[None] | None = None
    if settings.magic.schedule and state.llm is not None and (settings.magic.model or settings.llm.model):
        task = asyncio.create_task(scheduler.loop(state, store), name="magic-scheduler")
    log.info("feedback_store_opened", scheduler=task is not None)
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
