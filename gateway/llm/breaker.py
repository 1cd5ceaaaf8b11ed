"""A circuit breaker for the LLM endpoint: stop calling an endpoint that keeps failing.

Closed: calls go through; ``failures`` consecutive failed calls (each after its own retries) open it.
Open: for ``open_s`` seconds every call is refused at once with ``llm_unavailable`` and a ``Retry-After``
of the time left, so questions fail fast instead of each waiting out timeouts and retries.
Half-open: after that, exactly one call (the probe) goes through while the others are still refused; its
success closes the breaker, its failure opens it for another ``open_s``.

A call that timed out counts as a failure, also when the request's deadline rather than ``llm.timeout_s``
ended it: an endpoint that accepts calls and never answers must open the breaker. An outcome that says
nothing about the endpoint (the deadline was spent before the call went out or while it waited for a
slot, the call was refused by backpressure, the client left) neither closes nor opens it: :meth:`release`
gives the probe slot back.

>>> b = Breaker(failures=2, open_s=10.0)
>>> b.allow(now=0.0); b.failed(now=0.0); b.allow(now=0.0); b.failed(now=0.0)
>>> b.state
'open'
>>> b.allow(now=10.5); b.state
'half_open'
>>> b.succeeded(); b.state
'closed'
"""

from __future__ import annotations

import math
import time
from typing import Literal

from gateway import errors
from gateway.observability import metrics

State = Literal["closed", "open", "half_open"]


class Breaker:
    def __init__(self, failures: int, open_s: float, name: str = "llm") -> None:
        self.threshold = failures
        self.open_s = open_s
        self.name = name
        self.state: State = "closed"
        self.consecutive = 0
        self.opened_at = 0.0
        self._probing = False

    def allow(self, now: float | None = None) -> None:
        """Raise :class:`errors.LLMUnavailable` unless a call may go out now."""
        if self.state == "closed":
            return
        now = time.monotonic() if now is None else now
        left = self.opened_at + self.open_s - now
        if self.state == "open" and left <= 0:
            self.state = "half_open"
            self._probing = False
        if self.state == "half_open" and not self._probing:
            self._probing = True  # this caller is the probe
            return
        error = errors.LLMUnavailable(
            f"the LLM endpoint failed {self.consecutive} calls in a row; calls are paused for "
            f"{max(left, 0):.1f} s more (llm.breaker_failures, llm.breaker_open_s)",
            breaker="open", retry_after_s=round(max(left, 0.0), 3),
        )
        error.retry_after = max(1, math.ceil(left))  # type: ignore[misc]  # whole seconds in the header
        raise error

    @property
    def is_open(self) -> bool:
        return self.state == "open"

    def succeeded(self) -> None:
        self.consecutive = 0
        self._probing = False
        if self.state != "closed":
            self.state = "closed"
            metrics.LLM_BREAKER_OPEN.set(0)

    def failed(self, now: float | None = None) -> None:
        self.consecutive += 1
        if self.state == "half_open" or self.consecutive >= self.threshold:
            self._probing = False
            self.opened_at = time.monotonic() if now is None else now
            if self.state != "open":
                self.state = "open"
                metrics.LLM_BREAKER_OPEN.set(1)

    def release(self) -> None:
        """The call ended without saying anything about the endpoint: let another call probe."""
        self._probing = False
