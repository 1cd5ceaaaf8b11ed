"""Batch logic: successful feedbacks update the guideline ``batch_size`` at a time (the paper's 10).

>>> [len(b) for b in batches(list(range(21)), 10)]
[10, 10]
>>> batches(list(range(9)), 10)
[]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def batches(items: Sequence[T], size: int) -> list[list[T]]:
    """The full batches of ``items`` in order; a partial last batch is left for a later run."""
    full = len(items) // size
    return [list(items[i * size:(i + 1) * size]) for i in range(full)]


def looks_like_guideline(text: str) -> bool:
    """The writer answered with the numbered-reminder format (at least reminder 1), not a refusal.

    >>> looks_like_guideline("1. Missing LIMIT\\n- Question: ...")
    True
    >>> looks_like_guideline("I cannot help with that.")
    False
    """
    for line in text.splitlines():
        head = line.strip().lstrip("#*").strip()
        number, dot, _ = head.partition(".")
        if dot and number.isdigit():
            return True
    return False
