"""``asyncio.timeout`` for the hot path: the same contract, one loop timer for all of a loop's timeouts.

Every ``POST /v1/sql`` runs inside several timeouts: the request's hard deadline, the query's guard against
a server that stopped answering, the pool wait and the connection's return. Each ``asyncio.timeout`` arms a
timer on the event loop and cancels it a millisecond later; under uvloop that pair, with the context
manager around it, costs about 5 µs, and four of them were a tenth of the gateway's CPU per request
(bench/throughput.py, docs/benchmarks.md).

Here a timeout registers with its loop's :class:`_Watchdog`, which keeps **one** timer, armed at the
earliest deadline it holds. Entering and leaving a timeout is a dictionary insert and delete; the timer is
only moved when a new deadline comes earlier than the armed one. When it fires, every timeout whose
deadline has come is expired exactly as ``asyncio.timeout`` expires it (its task is cancelled; leaving the
block turns that cancellation into ``TimeoutError``, unless the task was also cancelled for another
reason), and the timer is armed again at the earliest deadline left. A deadline less than
:data:`SLACK_S` earlier than the armed timer rides on it: a timeout may fire up to that much late, never
early.

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
import threading
from types import TracebackType

# How late a timeout may fire, at most, to spare moving the loop's timer for a deadline just before it.
SLACK_S = 0.005

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
                watchdog.timeouts.pop(self, None)
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
            watchdog.timeouts.pop(self, None)
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

    __slots__ = ("loop", "timeouts", "handle", "armed_at")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.timeouts: dict[Timeout, None] = {}
        self.handle: asyncio.TimerHandle | None = None
        self.armed_at = 0.0

    def add(self, timeout: Timeout) -> None:
        self.timeouts[timeout] = None
        when: float = timeout._when  # type: ignore[assignment]
        if self.handle is None or when < self.armed_at - SLACK_S:
            self._arm(when)

    def _arm(self, when: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.handle = self.loop.call_at(when, self._fire)
        self.armed_at = when

    def _fire(self) -> None:
        self.handle = None
        # The loop's clock may read a hair before the instant the timer was set for: no busy re-arming.
        now = self.loop.time() + 0.001
        due = [t for t in self.timeouts if t._when <= now]  # type: ignore[operator]
        due.sort(key=Timeout.when)  # type: ignore[arg-type]  # in deadline order, as separate timers fire
        for timeout in due:
            del self.timeouts[timeout]
            timeout._watchdog = None
            timeout._expire()
        if self.timeouts:
            self._arm(min(t._when for t in self.timeouts))  # type: ignore[type-var, arg-type]


_local = threading.local()  # each thread runs its own loop (the test client's portal, a CLI in a thread)


def _watchdog() -> _Watchdog:
    loop = asyncio.get_running_loop()
    watchdog: _Watchdog | None = getattr(_local, "watchdog", None)
    if watchdog is None or watchdog.loop is not loop:
        watchdog = _local.watchdog = _Watchdog(loop)
    return watchdog
