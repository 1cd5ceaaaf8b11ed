"""Faithful JSON for Postgres values.

Choices (documented in the README): ``numeric`` becomes a string holding the exact decimal (a JSON number
would be read back as a binary float by most clients); ``NaN``/``Infinity`` floats become strings; dates and
timestamps are ISO 8601; intervals are ISO 8601 durations built from Postgres's own (months, days,
microseconds) triple, so ``1 mon`` is never turned into 30 days; ``bytea`` is Postgres's hex form
``\\x...``; JSON and JSONB are decoded into JSON values; arrays are lists; anything else is its text form.
"""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import uuid
from collections.abc import Callable
from typing import Any

JsonValue = Any
Converter = Callable[[Any], JsonValue]


class Interval:
    """A Postgres interval kept as its exact parts."""

    __slots__ = ("months", "days", "microseconds")

    def __init__(self, months: int, days: int, microseconds: int) -> None:
        self.months, self.days, self.microseconds = months, days, microseconds

    def iso8601(self) -> str:
        sign_months = -1 if self.months < 0 else 1
        years, months = divmod(abs(self.months), 12)
        years, months = years * sign_months, months * sign_months
        sign = "-" if self.microseconds < 0 else ""
        secs_total = abs(self.microseconds)
        hours, rest = divmod(secs_total, 3_600_000_000)
        minutes, rest = divmod(rest, 60_000_000)
        seconds, micros = divmod(rest, 1_000_000)
        date_part = "".join(f"{v}{u}" for v, u in ((years, "Y"), (months, "M"), (self.days, "D")) if v)
        time_part = ""
        if hours:
            time_part += f"{sign}{hours}H"
        if minutes:
            time_part += f"{sign}{minutes}M"
        if seconds or micros:
            frac = f".{micros:06d}".rstrip("0") if micros else ""
            time_part += f"{sign}{seconds}{frac}S"
        if not date_part and not time_part:
            return "PT0S"
        return "P" + date_part + ("T" + time_part if time_part else "")


def decode_interval(parts: tuple[int, int, int]) -> Interval:
    months, days, microseconds = parts
    return Interval(months, days, microseconds)


def encode_interval(value: Interval) -> tuple[int, int, int]:  # pragma: no cover - the gateway never binds
    return value.months, value.days, value.microseconds


def to_json(value: Any) -> JsonValue:
    """Convert one value returned by asyncpg into a JSON-serializable value."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Interval):
        return value.iso8601()
    if isinstance(value, dt.timedelta):
        return _timedelta_iso(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
                          ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface)):
        return str(value)
    if hasattr(value, "lower") and hasattr(value, "upper") and hasattr(value, "isempty"):  # asyncpg Range
        return {"lower": to_json(value.lower), "upper": to_json(value.upper), "lower_inc": value.lower_inc,
                "upper_inc": value.upper_inc, "empty": value.isempty}
    return str(value)


def _timedelta_iso(value: dt.timedelta) -> str:
    return Interval(0, value.days, value.seconds * 1_000_000 + value.microseconds).iso8601()


# Types whose asyncpg value is already JSON: rows of these skip conversion entirely (the hot path).
PLAIN_TYPES = frozenset({"int2", "int4", "int8", "text", "varchar", "bpchar", "bool", "name", "char", "oid"})


def converter_for(type_name: str) -> Converter | None:
    """None when values of this type need no conversion."""
    return None if type_name in PLAIN_TYPES else to_json


def json_loads(text: str) -> JsonValue:
    return json.loads(text)
