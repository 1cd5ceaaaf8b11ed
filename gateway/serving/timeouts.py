"""``asyncio.timeout`` for the hot path: the same contract, one loop timer for all of a loop's timeouts.

Every ``POST /v1/sql`` runs inside several timeouts: the request's hard deadline, the query's guard against
a server that stopped answering, the pool wait and the connection's return. Each ``asyncio.timeout`` arms a
timer on the event loop and cancels it a millisecond later; under uvloop that pair, with the context
manager around it, costs about 5 µs, and four of them were a tenth of the gateway's CPU per request
(bench/throughput.py, docs/benchmarks.md).

Here a timeout registers with its loop's :class:`_Watchdog`, which keeps **one** timer, armed at the
earliest deadline it holds, and a heap of deadlines. Entering a timeout is a heap push and leaving it a
dictionary delete (its heap entry goes stale and is dropped when it reaches the top, or when stale entries
outnumber live ones); the timer is only moved when a new deadline comes before the armed one. When it fires,
the timeouts whose deadline has come are expired in deadline order, exactly as ``asyncio.timeout`` expires
them (the task is cancelled; leaving the block turns that cancellation into ``TimeoutError``, unless the task
was also cancelled for another reason), and the timer is armed again at the earliest live deadline. A
timeout fires when a timer of its own would: at the first timer callback at or after its deadline. Each
operation costs O(log n) in the timeouts a loop holds, as the loop's own timer heap does: a client that
holds many requests open (slow bodies) cannot make one expiry walk all of them.

>>> import asyncio
>>> async def slow() -> str:
...     try:
...         async with timeout(0.01):
...             await asyncio.sleep(1)
...     except TimeoutError:
...         return "timed out"
...     return "finished"
>>> asyncio.run(slow())
'timed out'
"""

from __future__ import annotations

import asyncio
import heapq
import threading
import weakref
from types import TracebackType

# Stale heap entries (timeouts left or rescheduled) kept before the heap is rebuilt from the live ones.
COMPACT_MIN = 64

_ENTERED, _EXPIRING, _EXPIRED, _EXITED = range(1, 5)


class Timeout:
    """An ``async with`` block that is cancelled at ``when`` (a ``loop.time()`` instant; None: never), as
    ``asyncio.Timeout``: ``TimeoutError`` out of the block, :meth:`expired` to tell it from other errors."""

    __slots__ = ("_when", "_task", "_state", "_cancelling", "_watchdog")

    def __init__(self, when: float | None) -> None:
        self._when = when
        self._task: asyncio.Task[object] | None = None
        self._state = 0
        self._cancelling = 0
        self._watchdog: _Watchdog | None = None

    def when(self) -> float | None:
        return self._when

    def reschedule(self, when: float | None) -> None:
        """Move the deadline of an entered timeout (None: never)."""
        if self._state != _ENTERED:
            raise RuntimeError("only an entered, unexpired Timeout can be rescheduled")
        self._when = when
        watchdog = self._watchdog
        if when is None:
            if watchdog is not None:
                self._watchdog = None
                watchdog.remove(self)
            return
        if watchdog is None:
            watchdog = self._watchdog = _watchdog()
        watchdog.add(self)

    def expired(self) -> bool:
        return self._state == _EXPIRING or self._state == _EXPIRED

    async def __aenter__(self) -> Timeout:
        if self._state:
            raise RuntimeError("Timeout has already been entered")
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Timeout should be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._state = _ENTERED
        if self._when is not None:
            watchdog = self._watchdog = _watchdog()
            watchdog.add(self)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        watchdog = self._watchdog
        if watchdog is not None:
            self._watchdog = None
            watchdog.remove(self)
        if self._state == _EXPIRING:
            self._state = _EXPIRED
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:  # type: ignore[union-attr]
                raise TimeoutError from exc  # no other cancel request is pending: this one was ours
        elif self._state == _ENTERED:
            self._state = _EXITED
        self._task = None

    def _expire(self) -> None:
        if self._state == _ENTERED:
            self._state = _EXPIRING
            self._task.cancel()  # type: ignore[union-attr]


def timeout(delay: float | None) -> Timeout:
    """A :class:`Timeout` ``delay`` seconds from now (None: never)."""
    if delay is None:
        return Timeout(None)
    return Timeout(asyncio.get_running_loop().time() + delay)


def timeout_at(when: float | None) -> Timeout:
    """A :class:`Timeout` at ``when``, in ``loop.time()``'s clock (None: never)."""
    return Timeout(when)


class _Watchdog:
    """One loop's entered timeouts with a deadline, and the one timer that expires them."""

    __slots__ = ("loop", "live", "heap", "handle", "armed_at", "entries")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)  # a thread's last watchdog must not keep its closed loop alive
        self.live: dict[Timeout, int] = {}  # entered timeout -> the number of its current heap entry
        self.heap: list[tuple[float, int, Timeout]] = []  # (deadline, entry number, timeout); stale ones too
        self.handle: asyncio.TimerHandle | None = None
        self.armed_at = 0.0
        self.entries = 0

    def add(self, timeout: Timeout) -> None:
        """Register ``timeout`` at its deadline (again, after a reschedule: its old entry goes stale)."""
        when: float = timeout._when  # type: ignore[assignment]
        self.entries += 1
        self.live[timeout] = self.entries
        heapq.heappush(self.heap, (when, self.entries, timeout))
        if self.handle is None or when < self.armed_at:
            loop = self.loop()
            if self.handle is not None:
                self.handle.cancel()
            self.handle = loop.call_at(when, self._fire)  # type: ignore[union-attr]
            self.armed_at = when
        self._compact()

    def remove(self, timeout: Timeout) -> None:
        if self.live.pop(timeout, None) is not None:
            self._compact()

    def _compact(self) -> None:
        if len(self.heap) > 2 * len(self.live) + COMPACT_MIN:
            self.heap = [(t._when, n, t) for t, n in self.live.items()]  # type: ignore[misc]
            heapq.heapify(self.heap)

    def _fire(self) -> None:
        self.handle = None
        loop = self.loop()
        if loop is None:
            return
        # What the timer was armed for is due, as it would be for a timer of its own (uvloop counts a delay
        # in whole milliseconds, so its clock may read a hair before the instant); later ones when the clock
        # has reached them.
        limit = max(loop.time(), self.armed_at)
        heap, live = self.heap, self.live
        while heap and heap[0][0] <= limit:
            _, number, timeout = heapq.heappop(heap)
            if live.get(timeout) == number:
                del live[timeout]
                timeout._watchdog = None
                timeout._expire()
        while heap and live.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)  # left or rescheduled since: nothing to arm for
        if heap:
            self.armed_at = heap[0][0]
            self.handle = loop.call_at(self.armed_at, self._fire)


_local = threading.local()  # each thread runs its own loop (the test client's portal, a CLI in a thread)


def _watchdog() -> _Watchdog:
    loop = asyncio.get_running_loop()
    watchdog: _Watchdog | None = getattr(_local, "watchdog", None)
    if watchdog is None or watchdog.loop() is not loop:
        watchdog = _local.watchdog = _Watchdog(loop)
    return watchdog
