"""Processes the benchmarks start beside the one they measure, so that none competes with it for the GIL."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

import httpx


@contextmanager
def in_own_process(target: Callable[..., None], *args: Any) -> Iterator[Any]:
    """Run ``target(*args, conn)`` in a spawned process; yield the first thing it sends on ``conn`` (a URL,
    say) and send it "stop" on the way out. ``target`` answers that by stopping what it serves."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=target, args=(*args, child), daemon=True)
    process.start()
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        process.join(timeout=10)


def wait_healthy(base_url: str, timeout_s: float = 30) -> None:
    """Return once ``base_url``/healthz answers 200; exit the benchmark if it does not within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(base_url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("gateway did not start")
        time.sleep(0.1)


__all__ = ["Connection", "in_own_process", "wait_healthy"]
