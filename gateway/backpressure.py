"""Backpressure: shed load early with a fast 429 or 503 instead of queueing without bound.

- :class:`RateLimiter`: a token bucket per API key and one per end user (per client address when auth is
  off), with rates per role (``backpressure.user_rate_per_s`` for users); 429 ``too_many_requests`` with
  ``Retry-After`` when a bucket is empty. Buckets live in memory per replica
  (``backpressure.max_tracked_clients`` of them at most, least recently seen dropped first).
- :class:`Strangers`: a small budget per client address for requests refused for a missing or invalid API
  key (``backpressure.unauthenticated_per_s``); once an address has spent it, its requests without a known
  key answer 429 before any key lookup, so guessing keys costs the store nothing and a valid key is never
  behind them (the key is checked before a request takes an in-flight slot).
- :class:`InFlight`: the number of requests being served; beyond ``backpressure.max_in_flight`` a request
  answers 503 ``overloaded`` at once (the HTTP middleware asks it first thing).
- :class:`KeyInFlight`: the requests being served per key (per end user with OIDC, per client address
  without a key), at most ``backpressure.max_in_flight_per_key`` each; one more answers 429
  ``too_many_in_flight`` at once, so that one client's slow or idle requests cannot take every slot.
- :class:`WaitBound`: a semaphore whose waiters are counted; beyond ``max_waiting`` a caller is refused with
  ``overloaded`` instead of joining the queue (the LLM client's call slots).

Everything here runs on the event loop's thread without awaiting between a check and its update, so plain
integers and dicts need no locks.

>>> limiter = RateLimiter(rate_per_s=1.0, burst=2, max_tracked=10)
>>> limiter.take("k", now=0.0), limiter.take("k", now=0.0), limiter.take("k", now=0.0)
(0.0, 0.0, 1.0)
>>> limiter.take("k", now=1.0)
0.0
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from gateway import errors
from gateway.auth.keys import Principal
from gateway.observability import metrics
from gateway.settings import BackpressureSettings


class RateLimiter:
    """Token buckets by key; :meth:`take` answers how long to wait (0.0: go ahead, a token was taken)."""

    def __init__(self, rate_per_s: float, burst: int, max_tracked: int) -> None:
        self.rate = rate_per_s
        self.burst = float(burst)
        self.max_tracked = max_tracked
        # key -> (tokens, instant of the last refill); ordered by last use for eviction.
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str, now: float | None = None) -> float:
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > self.max_tracked:
            # An evicted key starts again with a full bucket: bounded memory beats exactness for a key
            # nobody has seen for a while.
            self._buckets.popitem(last=False)
        return wait

    def wait(self, key: str, now: float | None = None) -> float:
        """How long until ``key`` has a token again, without taking one (0.0: it has one now)."""
        if self.rate <= 0 or key not in self._buckets:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets[key]
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def __len__(self) -> int:
        return len(self._buckets)


class RateLimits:
    """The gateway's rate limits: one limiter per role with its own limit, one for everyone else."""

    def __init__(self, settings: BackpressureSettings) -> None:
        self.default = RateLimiter(settings.rate_per_s, settings.burst, settings.max_tracked_clients)
        self.by_role = {role: RateLimiter(limit.rate_per_s, limit.burst, settings.max_tracked_clients)
                        for role, limit in settings.roles.items()}
        self.users = RateLimiter(settings.user_rate_per_s, settings.user_burst, settings.max_tracked_clients)

    @property
    def enabled(self) -> bool:
        return (self.default.rate > 0 or self.users.rate > 0
                or any(limiter.rate > 0 for limiter in self.by_role.values()))

    def check_principal(self, principal: Principal, address: str) -> None:
        """Take a token from each bucket the caller spends from: its API key's (with the key's role limit),
        its end user's (``backpressure.user_rate_per_s``, else the role limit), or, for neither (auth off),
        its address's. A frontend key serving many users keeps its cap; each user has a bucket of its own."""
        if principal.key_id is not None:
            self.check("key:" + principal.key_id, principal.role.value)
        if principal.user is not None:
            if self.users.rate > 0:
                self.check(principal.owner, principal.role.value, user=True)
            else:
                self.check(principal.owner, principal.role.value)
        if principal.key_id is None and principal.user is None:
            self.check("addr:" + address)

    async def admit(self, principal: Principal, address: str) -> None:
        """:meth:`check_principal`, awaited where limits may be shared (gateway.shared_limits overrides it)."""
        self.check_principal(principal, address)

    def limiter(self, role: str | None, user: bool) -> RateLimiter:
        return self.users if user else self.by_role.get(role, self.default) if role else self.default

    def check(self, key: str, role: str | None = None, *, user: bool = False) -> None:
        """Take a token for ``key``; raises :class:`errors.TooManyRequests` with ``Retry-After``."""
        limiter = self.limiter(role, user)
        wait = limiter.take(key)
        if wait > 0:
            raise self.refusal(limiter, wait, key, role, user=user)

    def refusal(self, limiter: RateLimiter, wait: float, key: str, role: str | None, *,
                user: bool) -> errors.TooManyRequests:
        """The 429 for ``key``'s empty bucket, counted."""
        metrics.REJECTED.labels("rate_limited").inc()
        setting = ("backpressure.user_rate_per_s" if user else f"backpressure.roles.{role}"
                   if role in self.by_role else "backpressure.rate_per_s")
        who = "user" if key.startswith("user:") else "API key" if role else "client"
        error = errors.TooManyRequests(
            f"rate limit of {limiter.rate:g} requests/s (burst {limiter.burst:g}) reached for this "
            f"{who}; retry after {wait:.2f} s ({setting})",
            retry_after_s=round(wait, 3),
        )
        error.retry_after = max(1, math.ceil(wait))  # type: ignore[misc]  # the header wants whole seconds
        return error


class Strangers:
    """Requests refused for their API key, counted per client address (:meth:`refused` after a 401)."""

    def __init__(self, settings: BackpressureSettings) -> None:
        self.limiter = RateLimiter(settings.unauthenticated_per_s, settings.unauthenticated_burst,
                                   settings.max_tracked_clients)

    def check(self, address: str) -> None:
        """Raise 429 when ``address`` spent its budget of refused requests."""
        wait = self.limiter.wait(address)
        if wait > 0:
            metrics.REJECTED.labels("unauthenticated").inc()
            error = errors.TooManyRequests(
                f"too many requests without a valid API key from this address; retry after {wait:.2f} s "
                "(backpressure.unauthenticated_per_s)", retry_after_s=round(wait, 3))
            error.retry_after = max(1, math.ceil(wait))  # type: ignore[misc]
            raise error

    def refused(self, address: str) -> None:
        self.limiter.take(address)


class InFlight:
    """Counts requests being served; :meth:`enter` refuses beyond the bound."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def enter(self) -> bool:
        if self.count >= self.limit:
            metrics.REJECTED.labels("in_flight").inc()
            return False
        self.count += 1
        metrics.IN_FLIGHT.set(self.count)
        return True

    def leave(self) -> None:
        self.count -= 1
        metrics.IN_FLIGHT.set(self.count)

    def overloaded(self) -> errors.Overloaded:
        return errors.Overloaded(
            f"{self.count} requests are being served, the most this replica takes at once "
            "(backpressure.max_in_flight); retry shortly", in_flight=self.count, limit=self.limit,
        )


class KeyInFlight:
    """Requests being served, counted by who sends them; :meth:`enter` refuses beyond ``limit`` (0: no limit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: dict[str, int] = {}  # only keys with requests in flight: bounded by max_in_flight

    @staticmethod
    def key_of(scope: Any) -> str:
        """Whose request this is: the authenticated principal's owner (its end user, else its API key),
        else the client's address (auth off: every caller is the same anonymous principal)."""
        principal = scope.get("state", {}).get("principal")
        if principal is not None and (principal.key_id is not None or principal.user is not None):
            return str(principal.owner)
        client = scope.get("client")
        return "addr:" + (client[0] if client else "unknown")

    def enter(self, key: str) -> bool:
        count = self.counts.get(key, 0)
        if self.limit and count >= self.limit:
            metrics.REJECTED.labels("in_flight_per_key").inc()
            return False
        self.counts[key] = count + 1
        return True

    def leave(self, key: str) -> None:
        count = self.counts.get(key, 0) - 1
        if count > 0:
            self.counts[key] = count
        else:
            self.counts.pop(key, None)

    def refused(self, key: str) -> errors.TooManyInFlight:
        return errors.TooManyInFlight(
            f"{self.counts.get(key, 0)} requests of this client are being served, the most one key takes at "
            "once (backpressure.max_in_flight_per_key); wait for one to finish", limit=self.limit)


class WaitBound:
    """A semaphore with at most ``max_waiting`` waiters; one more answers ``overloaded`` right away."""

    def __init__(self, slots: int, max_waiting: int, what: str, setting: str) -> None:
        self._slots = asyncio.Semaphore(slots)
        self.max_waiting = max_waiting
        self.waiting = 0
        self.what = what
        self.setting = setting

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._slots.locked():
            if self.waiting >= self.max_waiting:
                metrics.REJECTED.labels(f"{self.what}_queue").inc()
                raise errors.Overloaded(
                    f"{self.waiting} {self.what} calls are already waiting for a slot ({self.setting}); "
                    "retry shortly", waiting=self.waiting, limit=self.max_waiting,
                )
            self.waiting += 1
            try:
                await self._slots.acquire()
            finally:
                self.waiting -= 1
        else:
            await self._slots.acquire()
        try:
            yield
        finally:
            self._slots.release()


__all__ = ["InFlight", "KeyInFlight", "RateLimiter", "RateLimits", "Strangers", "WaitBound"]
