"""Rate limits that hold across every worker and replica: token buckets in the store (``backpressure.shared``).

Each API key's and end user's bucket is a row of ``rate_buckets`` (gateway.store.buckets), refilled at the
rate the caller's role (or ``user_rate_per_s``) sets. A process does not ask the store on every request: it
takes a *lease* of a few tokens at once (``shared_lease_s`` worth of the rate, at least one, at most the
burst) in one statement and spends them locally for at most :data:`LEASE_TTL_S`; only the request that
finds its lease empty waits for the store. Every admitted request spent a token of the shared bucket, so
N processes never admit more than the rate (plus the burst) in total; a lease left unspent when it expires
is lost, which can only admit fewer.

With the store unreachable (or slower than :data:`STORE_WAIT_S`) the limits fall back for
``shared_retry_s``: each process's own buckets (``shared_fail_open``, the default) or 503
``store_unavailable``. The switch and the way back are logged (``shared_limits_degraded``,
``shared_limits_restored``) and ``nl2sql_shared_limits_degraded`` is 1 meanwhile. Client-address buckets
(auth off) are never shared.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from gateway import errors
from gateway.auth.keys import Principal
from gateway.backpressure import RateLimits
from gateway.execute import faults
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.settings import BackpressureSettings
from gateway.store import Store, buckets

log = get_logger(__name__)

LEASE_TTL_S = 1.0  # leased tokens older than this are dropped: a process idle for a while holds none
STORE_WAIT_S = 0.5  # longest a request waits for the store's answer before the fallback takes over
_FAILURES: tuple[type[BaseException], ...] = (*faults.FAULTS, TimeoutError)


class SharedRateLimits(RateLimits):
    """:class:`RateLimits` whose key and user buckets live in the store; :meth:`admit` takes the tokens."""

    def __init__(self, settings: BackpressureSettings, store: Callable[[], Store | None]) -> None:
        super().__init__(settings)
        self.settings = settings
        self._store = store
        self._leases: dict[str, tuple[int, float]] = {}  # bucket -> (tokens left, monotonic expiry)
        # bucket -> monotonic time its next token is due, after the store found it empty: refused here until
        # then, so a throttled client's flood costs no store round trip (nor a lock on its bucket's row).
        self._empty: dict[str, float] = {}
        self._fallback_until = 0.0
        self.degraded = False

    async def admit(self, principal: Principal, address: str) -> None:
        if principal.key_id is None and principal.user is None:
            self.check("addr:" + address)
            return
        if principal.key_id is not None:
            await self._take("key:" + principal.key_id, principal.role.value, user=False)
        if principal.user is not None:
            await self._take(principal.owner, principal.role.value, user=self.users.rate > 0)

    def lease_size(self, role: str | None, user: bool) -> int:
        limiter = self.limiter(role, user)
        return max(1, min(int(limiter.burst), int(limiter.rate * self.settings.shared_lease_s)))

    async def _take(self, key: str, role: str | None, *, user: bool) -> None:
        limiter = self.limiter(role, user)
        if limiter.rate <= 0:
            return
        now = time.monotonic()
        left, expires = self._leases.get(key, (0, 0.0))
        if left > 0 and now < expires:
            self._leases[key] = (left - 1, expires)
            return
        due = self._empty.get(key)
        if due is not None and now < due:
            raise self.refusal(limiter, due - now, key, role, user=user)
        store = self._store()
        if store is None or now < self._fallback_until:
            self._fallback(key, role, user)
            return
        try:
            async with asyncio.timeout(STORE_WAIT_S):
                granted, wait = await buckets.take(store.pool, key, rate_per_s=limiter.rate, burst=limiter.burst,
                                                   want=self.lease_size(role, user))
        except _FAILURES as exc:
            if not isinstance(exc, TimeoutError) and faults.classify(exc) is None:
                raise
            metrics.SHARED_LIMIT_LEASES.labels("failed").inc()
            self._switch(degraded=True, error=repr(exc))
            self._fallback(key, role, user)
            return
        self._switch(degraded=False)
        now = time.monotonic()
        left, expires = self._leases.get(key, (0, 0.0))
        if granted <= 0:
            metrics.SHARED_LIMIT_LEASES.labels("empty").inc()
            if left > 0 and now < expires:  # a concurrent request of this process leased tokens meanwhile
                self._leases[key] = (left - 1, expires)
                return
            self._empty[key] = now + wait
            if len(self._empty) > self.settings.max_tracked_clients:
                self._empty = {k: v for k, v in self._empty.items() if v > now}
            raise self.refusal(limiter, wait, key, role, user=user)
        metrics.SHARED_LIMIT_LEASES.labels("granted").inc()
        # A lease taken by a concurrent request of this process meanwhile is kept: its tokens are spent.
        self._leases[key] = ((left if now < expires else 0) + granted - 1, now + LEASE_TTL_S)
        if len(self._leases) > self.settings.max_tracked_clients:
            self._leases = {k: v for k, v in self._leases.items() if v[1] > now}

    def _fallback(self, key: str, role: str | None, user: bool) -> None:
        if self.settings.shared_fail_open:
            self.check(key, role, user=user)
            return
        metrics.REJECTED.labels("shared_limits_unavailable").inc()
        raise errors.StoreUnavailable("shared rate limits cannot reach the store and backpressure.shared_fail_open "
                                      "is false; the request was not served")

    def _switch(self, *, degraded: bool, error: str = "") -> None:
        if degraded:
            self._fallback_until = time.monotonic() + self.settings.shared_retry_s
        if degraded == self.degraded:
            return
        self.degraded = degraded
        metrics.SHARED_LIMITS_DEGRADED.set(1 if degraded else 0)
        if degraded:
            log.warning("shared_limits_degraded", error=error,
                        fallback="local buckets" if self.settings.shared_fail_open else "refuse (503)",
                        retry_s=self.settings.shared_retry_s)
        else:
            log.info("shared_limits_restored")
