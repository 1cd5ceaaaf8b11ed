"""gateway.serving.timeouts keeps asyncio.timeout's contract with one loop timer for all timeouts.

Each scenario runs with both implementations and must end the same way: a differential test, so that the
shared timer cannot change what a caller sees (which block raises TimeoutError, which cancellation is
someone else's). The scenarios themselves are the ones the shared timer makes risky: a deadline earlier than
the armed timer, many deadlines at once, timeouts left before they fire, rescheduling.
"""

from __future__ import annotations

import asyncio
import doctest
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import uvloop

from gateway.serving import timeouts

IMPLEMENTATIONS = {"asyncio": (asyncio.timeout, asyncio.timeout_at), "shared": (timeouts.timeout, timeouts.timeout_at)}
LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


def run(loop_name: str, coro: Any) -> Any:
    loop = LOOPS[loop_name]()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


async def _guarded(coro: Any) -> Any:
    # A shared timer that forgot a deadline would hang the test: fail it instead.
    async with asyncio.timeout(5):
        return await coro


async def expires(timeout: Callable[..., Any], _: Any) -> list[Any]:
    seen = []
    try:
        async with timeout(0.01) as cm:
            await asyncio.sleep(1)
    except TimeoutError:
        seen.append("timeout")
    seen.append(cm.expired())
    return seen


async def leaves_in_time(timeout: Callable[..., Any], _: Any) -> list[Any]:
    async with timeout(0.5) as cm:
        await asyncio.sleep(0)
    await asyncio.sleep(0.6)  # past the deadline: nothing may fire after the block is left
    return [cm.expired(), asyncio.current_task().cancelling()]  # type: ignore[union-attr]


async def earlier_than_armed(timeout: Callable[..., Any], _: Any) -> list[Any]:
    """A far deadline arms the timer; a near one entered under it must still fire on its own time."""
    seen = []
    async with timeout(30) as outer:
        try:
            async with timeout(0.01) as inner:
                await asyncio.sleep(1)
        except TimeoutError:
            seen.append("inner")
    seen += [inner.expired(), outer.expired()]
    return seen


async def outer_fires_first(timeout: Callable[..., Any], _: Any) -> list[Any]:
    """The outer block's deadline comes first: the TimeoutError is the outer block's; the inner one lets the
    cancellation through."""
    seen = []
    try:
        async with timeout(0.01) as outer:
            try:
                async with timeout(10) as inner:
                    await asyncio.sleep(1)
            except TimeoutError:
                seen.append("inner raised")
            except asyncio.CancelledError:
                seen.append("inner cancelled")
                raise
    except TimeoutError:
        seen.append("outer raised")
    seen += [inner.expired(), outer.expired()]
    return seen


async def someone_else_cancels(timeout: Callable[..., Any], _: Any) -> list[Any]:
    """Another cancel request arrives while the timeout's cancellation is on its way out of the block: the
    cancellation is not swallowed into a TimeoutError."""
    async def work() -> str:
        async with timeout(0.01):
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                asyncio.current_task().cancel()  # type: ignore[union-attr]
                raise
        return "finished"

    try:
        return [await asyncio.ensure_future(work())]
    except asyncio.CancelledError:
        return ["cancelled"]
    except TimeoutError:
        return ["timeout"]


async def many_at_once(timeout: Callable[..., Any], _: Any) -> list[Any]:
    """Forty timeouts, shuffled deadlines, half of them left long before they could fire: each that fires does
    so in deadline order and never before its deadline. The left ones' deadlines are far (10 s), so that a
    loaded machine cannot make them fire before their task gets to leave."""
    loop = asyncio.get_running_loop()
    fired: list[tuple[float, int]] = []
    early: list[int] = []

    async def one(i: int, delay: float, leave: bool) -> None:
        try:
            async with timeout(delay) as cm:
                await asyncio.sleep(0 if leave else 1)
        except TimeoutError:
            if loop.time() < cm.when() - 0.002:  # the loop's clock has millisecond steps
                early.append(i)
            fired.append((cm.when(), i))

    delays = [10.0 if i % 2 == 0 else 0.01 + ((i * 7) % 40) * 0.004 for i in range(40)]
    await asyncio.gather(*(one(i, d, i % 2 == 0) for i, d in enumerate(delays)))
    # In the order of the deadlines as entered (a loaded machine may enter them out of the delays' order).
    return [early, sorted(i for _, i in fired) == list(range(1, 40, 2)), fired == sorted(fired)]


async def all_due_at_once(timeout: Callable[..., Any], _: Any) -> list[Any]:
    """The loop was busy past several deadlines: they fire in deadline order, as separate timers do."""
    fired: list[float] = []

    async def one(delay: float) -> None:
        try:
            async with timeout(delay):
                await asyncio.sleep(1)
        except TimeoutError:
            fired.append(delay)

    tasks = [asyncio.ensure_future(one(d)) for d in (0.04, 0.01, 0.05, 0.02, 0.03)]
    await asyncio.sleep(0)  # every timeout entered
    time.sleep(0.1)  # noqa: ASYNC251 - the point: the loop is blocked past every deadline
    await asyncio.gather(*tasks)
    return fired


async def reschedule_never(_: Any, timeout_at: Callable[..., Any]) -> list[Any]:
    loop = asyncio.get_running_loop()
    async with timeout_at(loop.time() + 0.01) as cm:
        cm.reschedule(None)
        await asyncio.sleep(0.05)
    return [cm.expired(), cm.when()]


async def reschedule_sooner(_: Any, timeout_at: Callable[..., Any]) -> list[Any]:
    loop = asyncio.get_running_loop()
    try:
        async with timeout_at(loop.time() + 30) as cm:
            cm.reschedule(loop.time() + 0.01)
            await asyncio.sleep(1)
    except TimeoutError:
        return ["timeout", cm.expired()]
    return ["finished"]


async def already_past(_: Any, timeout_at: Callable[..., Any]) -> list[Any]:
    loop = asyncio.get_running_loop()
    try:
        async with timeout_at(loop.time() - 1):
            await asyncio.sleep(1)
    except TimeoutError:
        return ["timeout"]
    return ["finished"]


async def no_deadline(timeout: Callable[..., Any], _: Any) -> list[Any]:
    async with timeout(None) as cm:
        await asyncio.sleep(0.01)
    return [cm.expired(), cm.when()]


SCENARIOS = [expires, leaves_in_time, earlier_than_armed, outer_fires_first, someone_else_cancels, many_at_once, all_due_at_once,
             reschedule_never, reschedule_sooner, already_past, no_deadline]


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_same_outcome_as_asyncio(scenario: Callable[..., Any], loop_name: str) -> None:
    outcomes = {name: run(loop_name, _guarded(scenario(*pair))) for name, pair in IMPLEMENTATIONS.items()}
    assert outcomes["shared"] == outcomes["asyncio"]


def test_the_expected_outcomes() -> None:
    """The differential test above would pass for two equal wrong answers: pin what asyncio does."""
    pair = IMPLEMENTATIONS["shared"]
    assert run("uvloop", _guarded(expires(*pair))) == ["timeout", True]
    assert run("uvloop", _guarded(earlier_than_armed(*pair))) == ["inner", True, False]
    assert run("uvloop", _guarded(outer_fires_first(*pair))) == ["inner cancelled", "outer raised", False, True]
    assert run("uvloop", _guarded(someone_else_cancels(*pair))) == ["cancelled"]
    assert run("uvloop", _guarded(many_at_once(*pair))) == [[], True, True]
    assert run("uvloop", _guarded(reschedule_sooner(*pair))) == ["timeout", True]
    assert run("uvloop", _guarded(all_due_at_once(*pair))) == [0.01, 0.02, 0.03, 0.04, 0.05]


def test_left_timeouts_leave_nothing_behind() -> None:
    """Thousands of timeouts entered and left: the loop's watchdog holds none of them afterwards, and its
    heap keeps few stale entries."""
    async def churn() -> tuple[int, int]:
        for _ in range(2000):
            async with timeouts.timeout(5):
                await asyncio.sleep(0)
        watchdog = timeouts._watchdog()
        return len(watchdog.live), len(watchdog.heap)

    live, heap = run("uvloop", churn())
    assert live == 0 and heap <= timeouts.COMPACT_MIN


def test_an_expiry_does_not_walk_the_timeouts_still_waiting() -> None:
    """Thousands of requests held open (slow bodies, say) with far deadlines: near deadlines still expire,
    each taking its own heap entry off and leaving the far ones' entries untouched."""
    async def held(release: asyncio.Event) -> None:
        async with timeouts.timeout(60):
            await release.wait()

    async def scenario() -> list[Any]:
        release = asyncio.Event()
        far = [asyncio.ensure_future(held(release)) for _ in range(5000)]
        await asyncio.sleep(0)
        watchdog = timeouts._watchdog()
        before = len(watchdog.heap)
        expired = 0
        for _ in range(20):
            try:
                async with timeouts.timeout(0.001):
                    await asyncio.sleep(1)
            except TimeoutError:
                expired += 1
        after = len(watchdog.heap)
        release.set()
        await asyncio.gather(*far)
        return [before, after, expired, len(watchdog.live)]

    assert run("uvloop", _guarded(scenario())) == [5000, 5000, 20, 0]


def test_loops_in_threads_keep_their_own_timer() -> None:
    """Two threads, each with its own loop, time out independently."""
    results: dict[str, list[Any]] = {}

    def thread(name: str) -> None:
        results[name] = run("uvloop", _guarded(many_at_once(*IMPLEMENTATIONS["shared"])))

    threads = [threading.Thread(target=thread, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"a": [[], True, True], "b": [[], True, True]}


def test_entered_twice_or_rescheduled_after_exit_is_refused() -> None:
    async def twice() -> list[str]:
        seen = []
        cm = timeouts.timeout(1)
        async with cm:
            pass
        for attempt in (lambda: cm.__aenter__(), lambda: _reschedule(cm)):
            try:
                await attempt()
            except RuntimeError:
                seen.append("refused")
        return seen

    assert run("uvloop", twice()) == ["refused", "refused"]


async def _reschedule(cm: timeouts.Timeout) -> None:
    cm.reschedule(None)


def test_the_module_example_runs() -> None:
    assert doctest.testmod(timeouts).failed == 0
