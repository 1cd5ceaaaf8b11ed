"""What a batch of rows is counted against the result budget (gateway.execute.budget.measure): flat values
take a shortcut; every value must still count exactly what the general walk counts."""

from __future__ import annotations

import decimal

from gateway.execute.budget import _size, measure

VALUES = ["text", "é" * 100, b"\x00\x01", bytearray(b"xyz"), 12, 2**100, 1.5, decimal.Decimal("1.10"), None, True,
          ["a", {"k": ["v", 2]}], {"a": [1, 2]}, ("t", "u")]


def test_every_value_counts_what_the_general_walk_counts() -> None:
    records = [tuple(VALUES), tuple(reversed(VALUES))]
    measured = list(range(len(VALUES)))
    expected = sum(_size(v) for record in records for v in record) + 2 * 64
    assert measure(records, measured, 64) == expected


def test_containers_count_what_they_hold() -> None:
    assert measure([(["x" * 1000],)], [0], 0) > 1000
    assert measure([(None,)], [0], 0) == 0
