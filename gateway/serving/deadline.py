"""The request's deadline (``server.request_timeout_s``), held in a context variable.

The HTTP middleware starts the clock when a request arrives; every stage that waits (pool acquire, the
query's ``statement_timeout``, LLM calls and their retries) reads what is left with :func:`remaining` and
caps its own timeout with it, so that no stage outlives the request. Code running outside a request (the
CLI, MAGIC's scheduler) sees no deadline and keeps its own timeouts.

The cooperative checks are the first layer; behind them each entry point enforces the deadline (the HTTP
middleware, an MCP tool call, a CLI operation): it cancels what is still running :data:`HARD_GRACE_S` after
the deadline and answers ``deadline_exceeded``. The layers inside answer a little earlier, so that the one
that knows what was slow speaks: a query's client-side guard :data:`NET_GRACE_S` after the deadline (the
server's own ``statement_timeout`` ends at the deadline), an MCP tool call at :data:`HANDLER_GRACE_S`.
What runs after a cancellation (returning a connection) is bounded by :data:`CLEANUP_S`, so a request ends
within ``HARD_GRACE_S + CLEANUP_S`` of its deadline even when the database stopped answering altogether.

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

import asyncio
import time
from collections.abc import Awaitable
from contextvars import ContextVar, Token
from typing import TypeVar

from gateway import errors

# A time.monotonic() instant; None outside a request.
_DEADLINE: ContextVar[float | None] = ContextVar("nl2sql_deadline", default=None)

# Below this much time left no database or LLM round trip can succeed: fail fast instead of trying.
MIN_LEFT_S = 0.05
# How long past the deadline each layer waits before it gives up on what runs inside it (module docstring).
NET_GRACE_S = 0.15
HANDLER_GRACE_S = 0.25
HARD_GRACE_S = 0.3
# The most a cancelled request spends cleaning up (a connection whose server stopped answering is closed).
CLEANUP_S = 0.1


def start(timeout_s: float) -> Token[float | None]:
    """Set the deadline ``timeout_s`` from now (the middleware does, per request)."""
    return _DEADLINE.set(time.monotonic() + timeout_s)


def start_at(instant: float | None) -> Token[float | None]:
    """Set the deadline to ``instant`` (a ``time.monotonic()`` value; None: no deadline), e.g. one carried
    into a task that does not inherit the request's context (the MCP SDK runs tool calls in its own)."""
    return _DEADLINE.set(instant)


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


T = TypeVar("T")


async def within(timeout_s: float, work: Awaitable[T], stage: str, setting: str) -> T:
    """Run ``work`` as a request runs: under a deadline ``timeout_s`` away that every stage reads, and a hard
    timeout :data:`HARD_GRACE_S` after it (``deadline_exceeded`` naming ``stage`` and the ``setting`` that
    gave the time). For entry points that are no HTTP request: a CLI operation, say."""
    token = start(timeout_s)
    try:
        async with asyncio.timeout(timeout_s + HARD_GRACE_S):
            return await work
    except TimeoutError:
        raise errors.DeadlineExceeded(f"{stage} did not finish within {timeout_s:g} s ({setting})",
                                      stage=stage) from None
    finally:
        reset(token)


async def operation(timeout_s: float, work: Awaitable[T], stage: str) -> T:
    """``work`` bounded as a command-line operation (``server.operation_timeout_s``, :func:`within`)."""
    return await within(timeout_s, work, stage, "server.operation_timeout_s")


def exceeded(stage: str) -> errors.DeadlineExceeded:
    return errors.DeadlineExceeded(
        f"the request's time budget (server.request_timeout_s) was spent before {stage} could finish",
        stage=stage,
    )
