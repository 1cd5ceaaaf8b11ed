"""A serving process raises the cyclic collector's young-generation threshold (gateway.serving.server): each
young collection walks what the requests in flight hold. A higher threshold set by the operator, or a
collector switched off, is left alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gateway.serving.server import YOUNG_GC_THRESHOLD, tune_collector


@pytest.fixture
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*before)


@pytest.mark.usefixtures("thresholds")
@pytest.mark.parametrize(("given", "expected"), [
    ((700, 10, 10), (YOUNG_GC_THRESHOLD, 10, 10)),  # Python's default: raised, the older ones kept
    ((50_000, 5, 20), (50_000, 5, 20)),  # an operator's higher threshold stays
    ((0, 10, 10), (0, 10, 10)),  # a collector switched off stays off
])
def test_a_serving_process_raises_only_a_lower_young_threshold(given: tuple[int, int, int],
                                                               expected: tuple[int, int, int]) -> None:
    gc.set_threshold(*given)
    tune_collector()
    assert gc.get_threshold() == expected
