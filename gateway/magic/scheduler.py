"""Regeneration inside the server: on an interval, and early when enough corrections wait.

Every replica runs this loop; the store's advisory lock (see :func:`gateway.magic.run.regenerate`) lets
exactly one of them run at a time, and the "last run" it consults is the store's, so replicas do not each
start a run per interval.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from gateway.magic.lifecycle import magic_for
from gateway.magic.run import refresh_gauges, regenerate
from gateway.observability.logging import get_logger
from gateway.pipeline.ports import Asking
from gateway.settings import MagicSettings
from gateway.store import Store, corrections, runs
from gateway.store.sources import StoreGuidelines

log = get_logger(__name__)


async def due(store: Store, settings: MagicSettings) -> str | None:
    """Why a run is due now (``threshold`` or ``interval``), or None."""
    pending = await corrections.count_pending(store.pool, verified_only=settings.verified_only)
    if pending == 0:
        return None
    if pending >= settings.min_new_corrections:
        return "threshold"
    last = await runs.last_finished_at(store.pool)
    if last is None or (datetime.now(UTC) - last).total_seconds() >= settings.interval_s:
        return "interval"
    return None


async def loop(state: Asking, store: Store) -> None:
    settings = state.settings.magic
    while True:
        await asyncio.sleep(settings.poll_s)
        try:
            trigger = await due(store, settings)
            if trigger is None:
                await refresh_gauges(store, settings)
                continue
            report = await regenerate(magic_for(state, store), trigger)
            if isinstance(state.guidelines, StoreGuidelines):
                state.guidelines.invalidate()
            log.info("scheduled_regeneration", trigger=trigger, outcome=report.outcome, version=report.version)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the scheduler outlives a bad run or a store outage
            log.warning("scheduled_regeneration_failed", error=repr(exc))
