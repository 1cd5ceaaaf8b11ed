"""The Status page's in-process latency history: quantiles per interval, bounded in intervals and samples."""

from __future__ import annotations

from gateway.observability import latency
from gateway.observability.latency import LatencyHistory


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_quantiles_per_interval_and_only_the_last_intervals_kept() -> None:
    clock = Clock()
    history = LatencyHistory(interval_s=10.0, keep=3, clock=clock)
    for ms in range(1, 101):  # 1 .. 100 ms in the first interval
        history.observe(ms / 1000)
    clock.now += 10
    history.observe(0.5)
    points = history.points()
    assert [p["n"] for p in points] == [100, 1]
    assert points[0]["p50_ms"] == 51.0 and points[0]["p95_ms"] == 96.0 and points[0]["p99_ms"] == 100.0
    assert points[1]["p50_ms"] == points[1]["p99_ms"] == 500.0
    for _ in range(5):
        clock.now += 10
        history.observe(0.001)
    assert len(history.points()) == 3  # keep=3: the oldest intervals are gone
    clock.now += 10
    assert history.points()[-1] == {**history.points()[-1], "n": 0, "p50_ms": None}  # a quiet interval


def test_samples_per_interval_are_bounded() -> None:
    clock = Clock()
    history = LatencyHistory(clock=clock)
    for i in range(latency.SAMPLES * 3):
        history.observe(i / 1e6)
    point = history.points()[-1]
    assert point["n"] == latency.SAMPLES * 3
    assert history._current is not None and len(history._current.samples) == latency.SAMPLES
