"""New connections to a target database back off after a failed connect or login, per target.

A wrong password, a dropped role or a server refusing connections fails every login the same way, and
trying again for each request (a wrong password once gave 2,817 failed logins in 20 s) locks accounts behind
LDAP/PAM or fail2ban and floods the server's log. So after a failed attempt no new connection to that target
is tried for a while: ``databases.NAME.connect_backoff_s``, doubled at each further failure up to
``connect_backoff_max_s``. Meanwhile requests that need a new connection fail at once with the last failure
(``database_unavailable``, naming the setting to fix). Then one attempt (the probe) goes out while the others
wait for its outcome; a success ends the backoff. A target's very first attempt is a probe too, so a burst of
requests against a wrong password logs in once, not once per request. Connections already open are not
affected: the backoff gates only new ones (the pool's ``connect`` hook).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import asyncpg

from gateway.execute import faults
from gateway.observability.logging import get_logger

log = get_logger(__name__)


class ConnectBackoff:
    def __init__(self, database: str, *, first_s: float, max_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.database = database
        self.first_s = first_s
        self.max_s = max_s
        self._clock = clock
        self.healthy = False  # the last attempt succeeded: connects go out freely, in parallel
        self.failures = 0  # consecutive failed attempts (a burst of parallel ones counts once)
        self.until = 0.0  # no attempt before this (clock time)
        self.last: BaseException | None = None
        self.generation = 0  # bumped at each recorded outcome: older attempts' failures are not news
        self._probe: asyncio.Event | None = None  # set when the probe in flight ends

    @property
    def wait_s(self) -> float:
        return float(min(self.first_s * 2 ** max(self.failures - 1, 0), self.max_s))

    async def connect(self, *args: Any, **kwargs: Any) -> asyncpg.Connection:
        """``asyncpg.connect``, unless the target is backing off (then :class:`faults.ConnectPaused`)."""
        generation, probe = await self._admit()
        try:
            conn = await asyncpg.connect(*args, **kwargs)
        except BaseException as exc:
            if faults.classify(exc) is not None:
                self.failed(exc, generation)
            raise
        else:
            self.succeeded()
            return conn
        finally:
            if probe:
                self._end_probe()

    async def _admit(self) -> tuple[int, bool]:
        """(generation, whether this attempt is the probe); raises while the backoff lasts."""
        while True:
            if self.healthy:
                return self.generation, False
            left = self.until - self._clock()
            if left > 0 and self.last is not None:
                raise faults.ConnectPaused(self.database, self.last, left, self.failures)
            if self._probe is None:
                self._probe = asyncio.Event()
                return self.generation, True
            await self._probe.wait()  # bounded by the caller's acquire timeout

    def _end_probe(self) -> None:
        if self._probe is not None:
            self._probe.set()
            self._probe = None

    def succeeded(self) -> None:
        if not self.healthy and self.failures:
            log.info("database_connect_recovered", database=self.database, failures=self.failures)
        self.healthy, self.failures, self.last = True, 0, None
        self.generation += 1

    def failed(self, exc: BaseException, generation: int) -> None:
        if generation != self.generation:  # a parallel attempt's failure was recorded already
            return
        self.healthy, self.last = False, exc
        self.failures += 1
        self.generation += 1
        self.until = self._clock() + self.wait_s
        log.warning("database_connect_backoff", database=self.database, failures=self.failures,
                    wait_s=self.wait_s, error=f"{type(exc).__name__}: {exc}")
