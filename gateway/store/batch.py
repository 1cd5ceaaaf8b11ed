"""Group commit for the store's per-answer writes: concurrent requests' rows go in one statement.

Every answered question writes an audit row (``gateway.store.audit``) and, for a new conversation, its first
turn (``gateway.store.conversations``). Written one request at a time, 200 concurrent questions queue 200
transactions on the store's few connections. A :class:`Batcher` collects the rows that arrive while the
previous batch is being written and writes them together: one round trip, one commit.

The contract of the single write stays:

- each request waits for *its* batch's commit before it answers, so what the gateway acknowledges is
  committed;
- each request gets its own result (the audit row inserted or not, the turn's number);
- nothing is lost on error: when a batch of several fails, each of its requests writes its row alone, as it
  did before batching, so one row the database refuses fails only its own request, and a store outage fails
  each the way the single write did;
- a request cancelled before its batch starts is left out.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["MAX_BATCH", "Batcher"]

T = TypeVar("T")
R = TypeVar("R")

MAX_BATCH = 256  # rows per statement: a bound on one statement's size, not a wait for more rows


class Batcher(Generic[T, R]):
    """Writes items in batches with ``write_many`` (one result per item, in order); ``write_one`` is the
    single write a failed batch falls back to, and what a batch of one uses."""

    def __init__(self, write_many: Callable[[list[T]], Awaitable[list[R]]],
                 write_one: Callable[[T], Awaitable[R]], *, max_batch: int = MAX_BATCH) -> None:
        self._write_many = write_many
        self._write_one = write_one
        self._max_batch = max_batch
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self.batches = 0  # statements written with more than one row (tests check that batching happens)

    async def submit(self, item: T) -> R:
        """Write ``item`` with whatever else is waiting; returns once its batch committed."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._drainer is None:
            # A context of its own: the batch is everyone's, its log lines must not carry this request's id.
            self._drainer = asyncio.create_task(self._drain(), context=contextvars.Context())
        try:
            return await future
        except _BatchFailed:
            return await self._write_one(item)  # as before batching: this row's own outcome

    async def _drain(self) -> None:
        batch: list[tuple[T, asyncio.Future[R]]] = []
        try:
            while self._queue:
                await asyncio.sleep(0)  # the requests ready in this turn of the loop join the batch
                batch = [entry for entry in self._queue[:self._max_batch] if not entry[1].done()]
                del self._queue[:self._max_batch]
                if not batch:
                    continue
                if len(batch) == 1:
                    await self._settle_one(*batch[0])
                    continue
                try:
                    results = await self._write_many([item for item, _ in batch])
                except Exception:  # noqa: BLE001 - every waiter retries alone and meets its own outcome
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(_BatchFailed())
                    continue
                self.batches += 1
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
            batch = []
        finally:
            self._drainer = None
            # Cancelled (the loop shuts down): no waiter is left hanging.
            for _, future in batch + self._queue:
                if not future.done():
                    future.cancel()
            self._queue.clear()

    async def _settle_one(self, item: T, future: asyncio.Future[R]) -> None:
        try:
            result = await self._write_one(item)
        except Exception as exc:  # noqa: BLE001 - handed to the one request that waits for it
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(result)

    async def close(self) -> None:
        """Wait for the batch being written (the store closes after it)."""
        drainer = self._drainer
        if drainer is not None:
            await asyncio.gather(drainer, return_exceptions=True)


class _BatchFailed(Exception):
    """The batch this item was in failed: the item is written alone."""
