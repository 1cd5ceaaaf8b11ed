"""Small statistics the eval report and the regression replay share."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no values.

    >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 95), percentile([], 50)
    (2, 4, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
