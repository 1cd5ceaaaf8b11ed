"""The request's deadline (``server.request_timeout_s``), held in a context variable.

The HTTP middleware starts the clock when a request arrives; every stage that waits (pool acquire, the
query's ``statement_timeout``, LLM calls and their retries) reads what is left with :func:`remaining` and
caps its own timeout with it, so that no stage outlives the request. Code running outside a request (the
CLI, MAGIC's scheduler) sees no deadline and keeps its own timeouts.

A context variable rather than an argument: the deadline crosses every layer (API, ask loop, execute, LLM)
and each layer only needs to read it; threading it through every signature would touch them all for one
float. Reading it costs one ``ContextVar.get`` and one clock read.

>>> token = start(2.0)
>>> 1.9 < remaining() <= 2.0
True
>>> cap(10.0) <= 2.0
True
>>> reset(token)
>>> remaining() is None
True
"""

from __future__ import annotations

import time
from contextvars import ContextVar, Token

from gateway import errors

# A time.monotonic() instant; None outside a request.
_DEADLINE: ContextVar[float | None] = ContextVar("nl2sql_deadline", default=None)

# Below this much time left no database or LLM round trip can succeed: fail fast instead of trying.
MIN_LEFT_S = 0.05


def start(timeout_s: float) -> Token[float | None]:
    """Set the deadline ``timeout_s`` from now (the middleware does, per request)."""
    return _DEADLINE.set(time.monotonic() + timeout_s)


def reset(token: Token[float | None]) -> None:
    _DEADLINE.reset(token)


def at() -> float | None:
    """The deadline as a ``time.monotonic()`` instant, or None outside a request."""
    return _DEADLINE.get()


def remaining() -> float | None:
    """Seconds left before the deadline (may be negative), or None outside a request."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def cap(timeout_s: float, stage: str = "the request") -> float:
    """``timeout_s`` capped by the time left; raises :class:`errors.DeadlineExceeded` when none is left."""
    left = remaining()
    if left is None:
        return timeout_s
    if left < MIN_LEFT_S:
        raise exceeded(stage)
    return min(timeout_s, left)


def earliest(deadline: float | None) -> float | None:
    """The earlier of ``deadline`` (a monotonic instant, or None) and the request's deadline."""
    ours = _DEADLINE.get()
    if ours is None:
        return deadline
    return ours if deadline is None else min(deadline, ours)


def exceeded(stage: str) -> errors.DeadlineExceeded:
    return errors.DeadlineExceeded(
        f"the request's time budget (server.request_timeout_s) was spent before {stage} could finish",
        stage=stage,
    )
