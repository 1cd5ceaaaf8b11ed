"""A small in-process history of API latency for the console's Status page: per interval (``INTERVAL_S``),
the count and p50/p95/p99 of the ``/v1`` and ``/mcp`` requests this process served, for the last ``KEEP``
intervals (``GET /v1/about``, ``latency``).

Prometheus keeps the real history; this is what an SRE sees without one, right after opening the page.
Each interval keeps at most ``SAMPLES`` durations (a uniform reservoir sample), so memory stays bounded
under any load; quantiles are computed only when asked. Per process: with ``serve --workers N`` each worker
answers with its own.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

INTERVAL_S = 10.0
KEEP = 60  # ten minutes
SAMPLES = 1024


@dataclass
class _Interval:
    start: float  # wall clock, seconds
    count: int = 0
    samples: list[float] = field(default_factory=list)

    def add(self, seconds: float, rng: random.Random) -> None:
        self.count += 1
        if len(self.samples) < SAMPLES:
            self.samples.append(seconds)
        else:  # reservoir sampling: every duration of the interval equally likely to be kept
            slot = rng.randrange(self.count)
            if slot < SAMPLES:
                self.samples[slot] = seconds

    def point(self) -> dict[str, Any]:
        ordered = sorted(self.samples)

        def q(p: float) -> float | None:
            if not ordered:
                return None
            return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 3)

        return {"t": datetime.fromtimestamp(self.start, UTC).isoformat(), "n": self.count,
                "p50_ms": q(0.50), "p95_ms": q(0.95), "p99_ms": q(0.99)}


class LatencyHistory:
    """Durations observed per interval; :meth:`points` lists the last ``keep`` intervals, oldest first."""

    def __init__(self, interval_s: float = INTERVAL_S, keep: int = KEEP,
                 clock: Callable[[], float] = time.time) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self._closed: deque[_Interval] = deque(maxlen=keep - 1)
        self._current: _Interval | None = None
        self._rng = random.Random(0)

    def _roll(self, now: float) -> _Interval:
        start = now - now % self.interval_s
        current = self._current
        if current is None or current.start != start:
            if current is not None:
                self._closed.append(current)
            current = self._current = _Interval(start)
        return current

    def observe(self, seconds: float) -> None:
        self._roll(self.clock()).add(seconds, self._rng)

    def points(self) -> list[dict[str, Any]]:
        current = self._roll(self.clock())
        return [i.point() for i in (*self._closed, current)]


HISTORY = LatencyHistory()
