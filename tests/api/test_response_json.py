"""Response bodies (gateway.execute.values.dumps): orjson writes them, the standard library whatever orjson
refuses; either way the JSON read back is what json.dumps(..., default=str) would have given."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import json
import uuid
from typing import Any

import pytest

from gateway.execute import values


class Kind(enum.StrEnum):
    CLIENT = "client"


def _deep(depth: int) -> Any:
    doc: Any = "bottom"
    for _ in range(depth):
        doc = [doc]
    return doc


def reference(data: Any) -> Any:
    """What the response said before orjson: the standard library's reading of the same data."""
    try:
        return json.loads(json.dumps(data, ensure_ascii=True, default=str))
    except RecursionError:
        return None  # too deep for the C encoder; compared structurally below


CASES = {
    "a result": {"columns": [{"name": "n", "type": "int8"}], "rows": [[1, "été", True, None, "12.50"]],
                 "timings": {"db_ms": 0.123}, "truncated": False},
    "a lone surrogate": {"rows": [["\ud800 alone"]]},
    "an integer beyond 64 bits": {"rows": [[2**70, -(2**64)]]},
    "a key that is not a string": {1: "one", "x": {2: "two"}},
    "nested past orjson's limit": _deep(300),
    "a datetime, written by str()": {"at": dt.datetime(2026, 11, 26, 1, 2, 3, tzinfo=dt.UTC), "day": dt.date(2026, 1, 2)},
    "a decimal, a uuid, a str enum": {"d": decimal.Decimal("1.10"), "u": uuid.UUID(int=7), "k": Kind.CLIENT},
    "controls and line separators": {"s": "a\x00b\nc\u2028d\"e\\"},
}


@pytest.mark.parametrize("name", CASES)
def test_the_same_json_as_the_standard_library(name: str) -> None:
    data = CASES[name]
    body = values.dumps(data)
    assert isinstance(body, bytes)
    assert json.loads(body) == reference(data)


def test_a_plain_result_is_written_by_orjson() -> None:
    # orjson's compact form: the standard library would write ", " and ": ".
    assert values.dumps({"rows": [[1, "a"]], "ok": True}) == b'{"rows":[[1,"a"]],"ok":true}'


def test_a_lone_surrogate_is_escaped_not_dropped() -> None:
    assert b"\\ud800" in values.dumps({"s": "\ud800"})


def test_a_document_too_deep_for_any_encoder_is_still_written() -> None:
    # Past the C encoder's recursion limit too: written without recursion (json.loads could not read it back).
    body = values.dumps(_deep(5000))
    assert body == b"[" * 5000 + b'"bottom"' + b"]" * 5000
