"""Faithful JSON for every Postgres value, total: no value a query can return fails its response.

Choices (the per-type table is in docs/values.md): ``numeric`` becomes a string holding the exact decimal
(a JSON number would be read back as a binary float by most clients), ``NaN``/``Infinity`` too; dates and
timestamps are ISO 8601 while Python can hold them, and Postgres's own text form beyond (``infinity``,
years past 9999, ``BC``, ``24:00:00``); intervals are ISO 8601 durations built from Postgres's own (months,
days, microseconds) triple, so ``1 mon`` is never turned into 30 days; ``bytea`` is Postgres's hex form
``\\x...``; JSON and JSONB are decoded into JSON values (deeper than Python's parser goes: their text);
arrays are lists; geometric types, bit strings, ``pg_lsn``, ``"char"`` and everything else are Postgres's
own text form.

Date and time types are decoded here from asyncpg's ``tuple`` form (the wire's integers) straight into
their final strings, so rows of them need no second pass and no value is out of Python's range.
"""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from asyncpg import Record
from asyncpg.types import BitString, Box, Circle, Line, LineSegment, Path, Point, Polygon

JsonValue = Any
Converter = Callable[[Any], JsonValue]

_US_PER_DAY = 86_400_000_000
_INT64_MAX, _INT64_MIN = 2**63 - 1, -(2**63)
_INT32_MAX, _INT32_MIN = 2**31 - 1, -(2**31)
_PG_EPOCH = dt.datetime(2000, 1, 1)
_PG_EPOCH_ORDINAL = dt.date(2000, 1, 1).toordinal()
_MAX_ORDINAL = dt.date.max.toordinal()
_DAYS_PER_400_YEARS = 146_097


class Interval:
    """A Postgres interval kept as its exact parts."""

    __slots__ = ("months", "days", "microseconds")

    def __init__(self, months: int, days: int, microseconds: int) -> None:
        self.months, self.days, self.microseconds = months, days, microseconds

    def iso8601(self) -> str:
        if (self.months, self.days, self.microseconds) == (_INT32_MAX, _INT32_MAX, _INT64_MAX):
            return "infinity"  # Postgres 17's infinite intervals
        if (self.months, self.days, self.microseconds) == (_INT32_MIN, _INT32_MIN, _INT64_MIN):
            return "-infinity"
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


def encode_interval(value: Interval) -> tuple[int, int, int]:
    return value.months, value.days, value.microseconds


# --- dates and times (asyncpg's tuple form: microseconds or days since 2000-01-01) ---------------------------

def _pg_date(days: int) -> str:
    """Postgres's text (DateStyle ISO) for any day: years past 9999, and ``BC`` (there is no year 0)."""
    cycles, rest = divmod(_PG_EPOCH_ORDINAL + days - 1, _DAYS_PER_400_YEARS)
    day = dt.date.fromordinal(rest + 1)  # the same day of the 400-year Gregorian cycle
    year = day.year + 400 * cycles
    if year <= 0:
        return f"{1 - year:04d}-{day.month:02d}-{day.day:02d} BC"
    return f"{year:04d}-{day.month:02d}-{day.day:02d}"


def _clock(us: int) -> str:
    """HH:MM:SS[.ffffff] as Python's isoformat writes it (microseconds only when not zero)."""
    hours, rest = divmod(us, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, micros = divmod(rest, 1_000_000)
    text = f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    return text + f".{micros:06d}" if micros else text


def _pg_timestamp(us: int, zone: str) -> str:
    days, rest = divmod(us, _US_PER_DAY)
    date = _pg_date(days)
    bc = date.endswith(" BC")
    clock = _clock(rest).rstrip("0").rstrip(".") if rest % 1_000_000 else _clock(rest)  # Postgres: .5, not .500000
    text = f"{date[:-3] if bc else date} {clock}{zone}"
    return text + " BC" if bc else text


def decode_date(parts: tuple[int]) -> str:
    days = parts[0]
    ordinal = _PG_EPOCH_ORDINAL + days
    if 1 <= ordinal <= _MAX_ORDINAL:
        return dt.date.fromordinal(ordinal).isoformat()
    if days == _INT32_MAX:
        return "infinity"
    if days == _INT32_MIN:
        return "-infinity"
    return _pg_date(days)


def decode_timestamp(parts: tuple[int]) -> str:
    us = parts[0]
    try:
        return (_PG_EPOCH + dt.timedelta(microseconds=us)).isoformat()
    except OverflowError:
        return _infinite(us) or _pg_timestamp(us, "")


def decode_timestamptz(parts: tuple[int]) -> str:
    """UTC, as asyncpg's datetimes were: ``+00:00`` in ISO form, ``+00`` in Postgres's."""
    us = parts[0]
    try:
        return (_PG_EPOCH + dt.timedelta(microseconds=us)).isoformat() + "+00:00"
    except OverflowError:
        return _infinite(us) or _pg_timestamp(us, "+00")


def _infinite(us: int) -> str | None:
    return "infinity" if us == _INT64_MAX else "-infinity" if us == _INT64_MIN else None


def decode_time(parts: tuple[int]) -> str:
    return _clock(parts[0])  # 24:00:00 included, which Python's time cannot hold


def decode_timetz(parts: tuple[int, int]) -> str:
    us, seconds_west = parts
    east = -seconds_west
    sign = "-" if east < 0 else "+"
    hours, rest = divmod(abs(east), 3600)
    minutes, seconds = divmod(rest, 60)
    zone = f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")
    return _clock(us) + zone


# Encoders, for the parameters the gateway's own helper queries bind (gateway.execute.samples).

def encode_date(value: dt.date) -> tuple[int]:
    return (value.toordinal() - _PG_EPOCH_ORDINAL,)


def encode_timestamp(value: dt.datetime) -> tuple[int]:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    delta = value - _PG_EPOCH
    return ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds,)


def encode_time(value: dt.time) -> tuple[int]:
    return ((value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000 + value.microsecond,)


def encode_timetz(value: dt.time) -> tuple[int, int]:
    offset = value.utcoffset() or dt.timedelta(0)
    return encode_time(value)[0], -int(offset.total_seconds())


def encode_float4(value: float) -> bytes:
    return struct.pack("!f", float(value))


def encode_pg_lsn(value: str | int) -> bytes:
    if isinstance(value, str):
        high, low = value.split("/")
        value = (int(high, 16) << 32) | int(low, 16)
    return value.to_bytes(8, "big")


# --- other types decoded on the wire ---------------------------------------------------------------------

def char_json(value: Any) -> JsonValue:
    """``"char"`` (one byte; asyncpg gives ``bytes`` and takes no codec for it): Postgres's text form, ``\\ooo``
    octal for a byte above 127; arrays of it element by element."""
    if isinstance(value, list):
        return [char_json(v) for v in value]
    if not isinstance(value, bytes):
        return to_json(value)
    if not value or value[0] == 0:
        return ""
    return chr(value[0]) if value[0] < 128 else f"\\{value[0]:03o}"


def decode_pg_lsn(data: bytes) -> str:
    value = int.from_bytes(data, "big")
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def decode_float4(data: bytes) -> float | str:
    """The shortest decimal that reads back as the same float4, as Postgres prints it (1.1, not
    1.100000023841858)."""
    value: float = struct.unpack("!f", data)[0]
    if not math.isfinite(value):
        return _float_text(value)
    for digits in range(6, 10):
        short = float(f"{value:.{digits}g}")
        if struct.unpack("!f", struct.pack("!f", short))[0] == value:
            return short
    return value


def decode_json(text: str) -> JsonValue:
    """JSON text to JSON values; a document nested deeper than Python's parser goes stays its text, and a
    number beyond a double (``1e400``) its digits."""
    try:
        return json.loads(text, parse_float=_json_float)
    except RecursionError:
        return text


def _json_float(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


# --- everything else, after decoding ---------------------------------------------------------------------

def to_json(value: Any) -> JsonValue:
    """Convert one value returned by asyncpg into a JSON-serializable value."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _float_text(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # exact digits, never an exponent; NaN, Infinity, -Infinity as Postgres
    if isinstance(value, Interval):
        return value.iso8601()
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _timedelta_iso(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, (Point, Box, Circle, Line, LineSegment, Path, Polygon)):  # Point is a tuple
        return _geometry(value)
    if isinstance(value, BitString):
        return value.as_string().replace(" ", "")  # asyncpg groups the bits by four
    if isinstance(value, Record):  # a composite type's value: its fields by name
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return value  # only JSON decodes to a dict, and it decodes to JSON values
    if isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
                          ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface)):
        return str(value)
    if hasattr(value, "lower") and hasattr(value, "upper") and hasattr(value, "isempty"):  # asyncpg Range
        return {"lower": to_json(value.lower), "upper": to_json(value.upper), "lower_inc": value.lower_inc,
                "upper_inc": value.upper_inc, "empty": value.isempty}
    return str(value)


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _num(value: float) -> str:
    """A float8 as Postgres prints it: shortest round trip, no trailing ``.0``."""
    if not math.isfinite(value):
        return _float_text(value)
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _pt(point: Any) -> str:
    return f"({_num(point[0])},{_num(point[1])})"


def _geometry(value: Any) -> str:
    """Postgres's text form of a geometric value."""
    if isinstance(value, Box):
        return f"{_pt(value.high)},{_pt(value.low)}"
    if isinstance(value, LineSegment):
        return f"[{_pt(value.p1)},{_pt(value.p2)}]"
    if isinstance(value, Circle):
        return f"<{_pt(value.center)},{_num(value.radius)}>"
    if isinstance(value, Line):
        return "{" + ",".join(_num(v) for v in value) + "}"
    if isinstance(value, Polygon):
        return "(" + ",".join(_pt(p) for p in value.points) + ")"
    if isinstance(value, Path):
        points = ",".join(_pt(p) for p in value.points)
        return f"({points})" if value.is_closed else f"[{points}]"
    return _pt(value)


def _timedelta_iso(value: dt.timedelta) -> str:
    return Interval(0, value.days, value.seconds * 1_000_000 + value.microseconds).iso8601()


# Types whose asyncpg value is already JSON: rows of these skip conversion entirely (the hot path). The date
# and time types are here because their codecs (gateway.execute.pool) return the final strings.
PLAIN_TYPES = frozenset({"int2", "int4", "int8", "text", "varchar", "bpchar", "bool", "name", "oid",
                         "date", "timestamp", "timestamptz", "time", "timetz", "json", "jsonb", "pg_lsn",
                         "xid", "xid8", "cid", "citext"})


def numeric_json(value: Any) -> JsonValue:
    """``numeric``: what :func:`to_json` gives, without the checks it makes before it gets to a Decimal."""
    return format(value, "f") if type(value) is decimal.Decimal else to_json(value)


def float_json(value: Any) -> JsonValue:
    """``float8`` / ``float4``: what :func:`to_json` gives, its float case first."""
    if type(value) is float:
        return value if math.isfinite(value) else _float_text(value)
    return to_json(value)


# Converters for types common in results, each the same as to_json for its values but cheaper per value.
_CONVERTERS: dict[str, Converter] = {"char": char_json, "_char": char_json, "numeric": numeric_json,
                                     "float8": float_json, "float4": float_json}


def converter_for(type_name: str) -> Converter | None:
    """None when values of this type need no conversion. A converter is never called with None (which
    every converter would give back unchanged)."""
    if type_name in PLAIN_TYPES:
        return None
    found: Converter = _CONVERTERS.get(type_name, to_json)
    return found


def json_loads(text: str) -> JsonValue:
    return json.loads(text)


# --- the response body ---------------------------------------------------------------------------------

# Datetimes and dataclasses go through ``default=str`` as with the standard library, not orjson's own forms.
_ORJSON = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(data: Any) -> bytes:
    """UTF-8 JSON of a response, total: a lone surrogate (from JSON text, which allows one) is written as its
    ``\\uXXXX`` escape, and a document too deep for the C encoder is written without recursion.

    orjson writes it (a 17-row answer in under a microsecond, where ``json.dumps`` took 12 and was the
    largest single cost of a ``POST /v1/sql`` in the profile; a large result about ten times faster). What
    orjson refuses (a lone surrogate, an integer beyond 64 bits, a key that is not a string, nesting deeper
    than 254) is written by the standard library as before. Non-finite floats never reach it (``to_json``
    writes them as Postgres's text); orjson would write ``null``, never invalid JSON."""
    try:
        return orjson.dumps(data, default=str, option=_ORJSON)
    except TypeError:  # orjson.JSONEncodeError is one
        pass
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, default=str).encode()
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, allow_nan=False, default=str).encode()
    except RecursionError:
        return "".join(_iter_json(data)).encode()


def _iter_json(data: Any) -> Iterator[str]:
    """JSON text of ``data`` with an explicit stack instead of recursion (ASCII-escaped)."""
    stack: list[Any] = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, _Token):
            yield item.text
        elif isinstance(item, dict):
            yield "{"
            parts: list[Any] = []
            for i, (key, value) in enumerate(item.items()):
                parts += [_Token(("," if i else "") + json.dumps(str(key)) + ":"), value]
            stack += [_Token("}"), *reversed(parts)]
        elif isinstance(item, (list, tuple)):
            yield "["
            parts = []
            for i, value in enumerate(item):
                parts += ([_Token(",")] if i else []) + [value]
            stack += [_Token("]"), *reversed(parts)]
        else:
            yield json.dumps(item, allow_nan=False, default=str)


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text
