"""Memory for query results: counted as rows arrive, per query and across the whole process.

A query's rows are fetched in batches (:func:`fetch_rows`); each batch is measured as it arrives and
charged to the query's :class:`Lease`. The query fails with ``result_too_large`` as soon as its own bytes
cross ``limits.max_result_bytes``, never after the whole result is in memory. Every lease draws on one
:class:`ResultBudget` per process (``backpressure.result_bytes_in_flight``): a new query waits up to
``backpressure.result_wait_s`` for room, then answers 503 ``overloaded`` with Retry-After; a running query
whose next batch would overdraw the budget answers the same, and gives its bytes back. A lease is freed when
the result it paid for is garbage (the response has been written).

A lease counts memory where it is spent: the bytes the driver receives, as they arrive and before they are
decoded (gateway.execute.wire, which also aborts a batch that would not fit), the decoded rows once a batch
is in (the received bytes' charge is then settled), and the response body while it is written
(:meth:`Lease.hold_body`). Row sizes are what the Python objects take (``sys.getsizeof``), which is what
the process's RSS follows.
"""

from __future__ import annotations

import asyncio
import decimal
import sys
import time
from collections.abc import Callable
from typing import Any

from gateway import errors

FIRST_BATCH = 32  # rows fetched before anything is known of their width
MAX_BATCH_BYTES = 256 * 1024  # a batch arrives whole before it is counted: keep what is uncounted small
POLL_S = 0.005


class ResultBudget:
    """Bytes of results held by this process; ``limit`` None means unbounded (tests, the CLI).

    ``used`` is what the leases hold now, ``peak`` the most they ever held at once (``reset_peak`` starts
    a new measurement)."""

    def __init__(self, limit: int | None = None, wait_s: float = 0.0) -> None:
        self.limit = limit
        self.wait_s = wait_s
        self.used = 0
        self.peak = 0

    async def admit(self) -> Lease:
        """A lease for one query, once the budget has room; :class:`errors.Overloaded` after ``wait_s``."""
        if self.limit is not None and self.used >= self.limit:
            deadline = time.monotonic() + self.wait_s
            while self.used >= self.limit:
                if time.monotonic() >= deadline:
                    raise errors.Overloaded(
                        f"query results in flight hold {self.used} bytes, backpressure.result_bytes_in_flight "
                        f"is {self.limit}; retry shortly", in_flight_bytes=self.used, limit=self.limit)
                await asyncio.sleep(POLL_S)
        return Lease(self)

    def reset_peak(self) -> None:
        self.peak = self.used

    def _add(self, size: int) -> None:
        self.used += size
        if self.used > self.peak:
            self.peak = self.used


class Lease:
    """One query's share of the budget: the bytes received and not yet decoded (``wire``, charged by
    gateway.execute.wire), the decoded rows, and the response body being written (``body``). ``bytes`` is
    their sum; :meth:`release` is idempotent."""

    __slots__ = ("budget", "bytes", "wire", "wire_raw", "body", "peak")

    def __init__(self, budget: ResultBudget) -> None:
        self.budget = budget
        self.bytes = 0
        self.wire = 0
        self.wire_raw = 0  # the bytes received that ``wire`` is charged for
        self.body = 0
        self.peak = 0  # the most this lease held at once

    def charge(self, size: int) -> None:
        """Charge decoded rows; :class:`errors.Overloaded` (and the lease released) when the budget is spent."""
        error = self._over(size)
        if error is not None:
            raise error
        self._add(size)

    def charge_wire(self, received: int, per_byte: int = 1, limit: int | None = None,
                    too_large: Callable[[], errors.GatewayError] | None = None) -> errors.GatewayError | None:
        """Charge ``received`` bytes as they arrive, at ``per_byte`` bytes of memory each; returns the error
        (the lease released) instead of raising, for the protocol callback that calls it. ``limit``: the
        query's own max_result_bytes, against the rows kept plus the bytes received since."""
        size = received * per_byte
        if limit is not None and self.bytes - self.wire - self.body + self.wire_raw + received > limit:
            self.release()
            return too_large() if too_large is not None else errors.ResultTooLarge(
                f"the result exceeds max_result_bytes ({limit} bytes)", limit=limit)
        error = self._over(size)
        if error is None:
            self.wire += size
            self.wire_raw += received
            self._add(size)
        return error

    def settle(self) -> None:
        """The received bytes have been decoded (and the rows kept measured): their charge goes."""
        self._sub(self.wire)
        self.wire = self.wire_raw = 0

    def hold_body(self, size: int) -> None:
        """Charge a response body (or one chunk of it) about to be written. Never refused: the rows it
        is written from were admitted, and the answer is already under way; others see it in ``used``."""
        self.body += size
        self._add(size)

    def drop_body(self, size: int) -> None:
        """The body (chunk) has been written."""
        size = min(size, self.body)
        self.body -= size
        self._sub(size)

    def release(self) -> None:
        self.budget.used -= self.bytes
        self.bytes = self.wire = self.wire_raw = self.body = 0

    def _over(self, size: int) -> errors.GatewayError | None:
        budget = self.budget
        if budget.limit is not None and budget.used + size > budget.limit:
            # Keep max_result_bytes below the budget: then this is the others' results, transient, so 503.
            self.release()
            return errors.Overloaded(
                f"query results in flight would exceed backpressure.result_bytes_in_flight ({budget.limit} "
                "bytes); retry shortly", limit=budget.limit)
        return None

    def _add(self, size: int) -> None:
        self.bytes += size
        if self.bytes > self.peak:
            self.peak = self.bytes
        self.budget._add(size)

    def _sub(self, size: int) -> None:
        self.bytes -= size
        self.budget.used -= size


def measure(records: list[Any], measured: list[int], fixed_per_row: int) -> int:
    """Bytes a batch of records holds: ``fixed_per_row`` for the record and its fixed-width values, plus
    the measured size of the values in columns ``measured`` (strings, bytes, lists, JSON values)."""
    size = fixed_per_row * len(records)
    getsizeof, flat = sys.getsizeof, _FLAT
    for record in records:
        for i in measured:
            value = record[i]
            # Most measured values are text or numeric: one getsizeof, as _size would give, without its stack.
            size += getsizeof(value) if type(value) in flat else _size(value)
    return size


# Types that hold no other objects (what _size would add for them is their own getsizeof).
_FLAT = frozenset({str, bytes, bytearray, int, float, decimal.Decimal})


def _size(value: Any) -> int:
    """Bytes ``value`` holds; iterative, since a JSON document can nest deeper than Python recurses."""
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        if item is None or item is True or item is False:
            continue
        size += sys.getsizeof(item)
        kind = type(item)
        if kind is list or kind is tuple:
            stack.extend(item)
        elif kind is dict:
            for k, v in item.items():
                stack.append(k)
                stack.append(v)
    return size


async def fetch_rows(cursor: Any, cap: int, *, limit: int, lease: Lease, measured: list[int], fixed_per_row: int,
                     convert: Callable[[list[Any]], list[list[Any]]],
                     too_large: Callable[[], errors.GatewayError]) -> tuple[list[list[Any]], bool, int]:
    """Fetch at most ``cap + 1`` rows in batches, counting bytes as they come.

    Returns (rows converted for JSON, truncated, batches fetched). Each batch's records are converted and
    dropped before the next one arrives, so no second full copy of the result is ever held. Batch sizes
    follow the bytes left: after a first small batch, as many rows as fit in half of what remains,
    and never more than ``MAX_BATCH_BYTES`` at once (a batch is only counted once it has arrived).
    """
    rows: list[list[Any]] = []
    held, want, batches = 0, min(FIRST_BATCH, cap + 1), 0
    while True:
        records = await cursor.fetch(want)
        batches += 1
        lease.settle()  # what was received for the batch is decoded: the records below are what remains
        size = measure(records, measured, fixed_per_row)
        held += size
        if held > limit:
            raise too_large()
        lease.charge(size)
        keep = records[: max(cap - len(rows), 0)]
        rows.extend(convert(keep))
        got_all = len(records) < want
        if len(rows) >= cap and (len(records) > len(keep) or got_all):
            return rows, len(records) > len(keep), batches
        if got_all:
            return rows, False, batches
        per_row = max(held // max(len(rows), 1), 1)
        room = min((limit - held) // 2, MAX_BATCH_BYTES)
        want = max(1, min(cap + 1 - len(rows), room // per_row))
