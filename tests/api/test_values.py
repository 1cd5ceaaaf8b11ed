"""Every value Postgres returns becomes JSON on POST /v1/sql (gateway.execute.values, docs/values.md).

The property, for values of every built-in type, edge values included (hypothesis draws them): the gateway
answers 200 with JSON, and that JSON read back by Postgres as the same type prints exactly what Postgres
prints for the original value (``(json_text::type)::text = original::text``), so nothing was lost or
changed on the way. A real `nl2sql-gateway serve` on loopback against the session's real Postgres.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.serving import start_serve


@pytest.fixture(scope="module")
def gateway(demo_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    # Warnings only: nobody reads the server's stderr pipe until it stops, and a full pipe would block it.
    proc, base = start_serve({"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_LOGGING__LEVEL": "WARNING"},
                             tmp_path_factory.mktemp("values"))
    try:
        with httpx.Client(base_url=base, timeout=60) as http:
            yield http
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=30)


def sql(http: httpx.Client, text: str) -> list[list[Any]]:
    try:
        response = http.post("/v1/sql", json={"database": "demo", "sql": text})
    except httpx.TimeoutException as exc:
        raise AssertionError(f"no answer to {text!r}") from exc
    assert response.status_code == 200, (text, response.text)
    rows: list[list[Any]] = json.loads(response.content)["rows"]  # strict JSON: NaN would not parse back
    return rows


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def element_text(value: Any, type_name: str) -> str | None:
    """The text Postgres reads back as this type for one JSON value (None: SQL NULL)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if type_name.endswith("range") and isinstance(value, dict):
        if value["empty"]:
            return "empty"
        lower = "" if value["lower"] is None else _quoted(element_text(value["lower"], ""))
        upper = "" if value["upper"] is None else _quoted(element_text(value["upper"], ""))
        return ("[" if value["lower_inc"] else "(") + f"{lower},{upper}" + ("]" if value["upper_inc"] else ")")
    if isinstance(value, list) and type_name.endswith("multirange"):
        return "{" + ",".join(str(element_text(v, type_name.replace("multirange", "range"))) for v in value) + "}"
    if isinstance(value, list) and type_name.endswith("[]"):
        parts = [element_text(v, type_name[:-2]) for v in value]
        return "{" + ",".join("NULL" if p is None else _quoted(p) for p in parts) + "}"
    return json.dumps(value)  # json, jsonb


def _quoted(text: str | None) -> str:
    return '"' + (text or "").replace("\\", "\\\\").replace('"', '\\"') + '"'


def assert_round_trips(http: httpx.Client, expression: str, type_name: str) -> None:
    [[value, original]] = sql(http, f"SELECT {expression} AS v, ({expression})::text AS t")
    if type_name == "json" and not isinstance(value, str):  # json may hold what jsonb cannot (a lone surrogate)
        assert value == json.loads(original), (expression, value, original)
        return
    back_type = "jsonb" if type_name == "json" else type_name
    if type_name in {"json", "jsonb"}:  # a document too deep to decode comes back as its text
        text: str | None = value if isinstance(value, str) and value == original else json.dumps(value)
    else:
        text = element_text(value, type_name)
    assert text is not None
    [[back, expected]] = sql(http, f"SELECT ({literal(text)}::{back_type})::text AS back, "
                                   f"(({expression})::{back_type})::text AS expected")
    assert back == expected, (expression, value, original)


# --- the values ---------------------------------------------------------------------------------------------

US_PER_DAY = 86_400_000_000
FIXED = [  # edge values hypothesis would rarely draw, one per line
    ("'infinity'::date", "date"), ("'-infinity'::date", "date"), ("'4713-01-01 BC'::date", "date"),
    ("'5874897-12-31'::date", "date"), ("'10000-01-01'::date", "date"), ("'0001-01-01 BC'::date", "date"),
    ("'infinity'::timestamp", "timestamp"), ("'294276-12-31 23:59:59.999999'::timestamp", "timestamp"),
    ("'4713-01-01 00:00 BC'::timestamp", "timestamp"), ("'-infinity'::timestamptz", "timestamptz"),
    ("'10000-01-01 12:00:00.5+00'::timestamptz", "timestamptz"), ("'24:00'::time", "time"),
    ("'24:00-15:59'::timetz", "timetz"), ("'00:00+15:59'::timetz", "timetz"),
    ("'infinity'::interval", "interval"), ("'-infinity'::interval", "interval"),
    ("'-178000000 years -2147483647 days -2562047788:00:54.775807'::interval", "interval"),
    ("'1 mon -30 days'::interval", "interval"),
    ("'NaN'::numeric", "numeric"), ("'Infinity'::numeric", "numeric"), ("'-Infinity'::numeric", "numeric"),
    ("'1e-100'::numeric", "numeric"), ("'NaN'::float8", "float8"), ("'-Infinity'::float4", "float4"),
    ("'1.1'::float4", "float4"), ("'1e308'::float8", "float8"), ("'-0'::float8", "float8"),
    ("'{\"a\":\"\\ud800\"}'::json", "json"), ("(repeat('[', 2000) || repeat(']', 2000))::jsonb", "jsonb"),
    ("(repeat('{\"a\":', 900) || '1' || repeat('}', 900))::jsonb", "jsonb"),
("'12.34'::money", "money"), ("'-92233720368547758.08'::money", "money"),
    ("B'10101'::bit(5)", "bit(5)"), ("B''::varbit", "varbit"), ("'a'::\"char\"", '"char"'),
    ("'(1.5,-2)'::point", "point"), ("'((1,2),(3,4))'::box", "box"), ("'<(1,2),3>'::circle", "circle"),
    ("'{1,2,3}'::line", "line"), ("'[(1,2),(3,4)]'::lseg", "lseg"), ("'((1,2),(3,4))'::path", "path"),
    ("'[(1,2),(3,4)]'::path", "path"), ("'((0,0),(1,1),(1,0))'::polygon", "polygon"),
    ("'a:1 b:2B'::tsvector", "tsvector"), ("'a & !b'::tsquery", "tsquery"), ("'FFFFFFFF/FFFFFFFF'::pg_lsn", "pg_lsn"),
    ("'::ffff:1.2.3.4/64'::inet", "inet"), ("'10.0.0.0/8'::cidr", "cidr"), ("'08:00:2b:01:02:03'::macaddr", "macaddr"),
    ("'08:00:2b:01:02:03:04:05'::macaddr8", "macaddr8"), ("'\\x00ff'::bytea", "bytea"),
    ("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid", "uuid"), ("'$.a[*] ? (@ > 1)'::jsonpath", "jsonpath"),
    ("'empty'::int4range", "int4range"), ("'(,5]'::int8range", "int8range"),
    ("'[2024-01-01,infinity)'::daterange", "daterange"), ("'[1.5,2.5]'::numrange", "numrange"),
    ("'[2024-01-01 10:00,2024-01-02)'::tsrange", "tsrange"), ("'{[1,3), [5,7)}'::int4multirange", "int4multirange"),
    ("ARRAY['10000-01-01'::date, 'infinity', NULL]", "date[]"), ("ARRAY['NaN'::numeric, 1.5]", "numeric[]"),
    ("ARRAY['(1,2)'::point]", "point[]"), ("ARRAY['[1,2)'::int4range]", "int4range[]"),
    ("'{\"a b\",\"c\\\\\\\"d\",NULL}'::text[]", "text[]"), ("9223372036854775807::int8", "int8"),
    ("'18446744073709551615'::xid8", "xid8"), ("true", "bool"), ("'x'::name", "name"),
]


@pytest.mark.parametrize(("expression", "type_name"), FIXED, ids=[e for e, _ in FIXED])
def test_edge_values_round_trip(gateway: httpx.Client, expression: str, type_name: str) -> None:
    assert_round_trips(gateway, expression, type_name)


def test_a_row_value_is_a_list_of_its_fields(gateway: httpx.Client) -> None:
    [[value]] = sql(gateway, "SELECT c FROM (SELECT 1 AS id, DATE '10000-01-01' AS day, 1.50 AS amount) c")
    assert value == [1, "10000-01-01", "1.50"]


def test_pg_proc_answers_200_with_its_char_columns(gateway: httpx.Client) -> None:
    response = gateway.post("/v1/sql", json={"database": "demo", "sql": "SELECT * FROM pg_proc"})
    if response.status_code == 422:
        pytest.skip("the default policy blocks the system catalogs")  # the "char" values are tested above
    assert response.status_code == 200
    body = response.json()
    kind = [c["name"] for c in body["columns"]].index("prokind")
    assert {row[kind] for row in body["rows"]} <= {"f", "p", "a", "w"}


NO_NUL = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")  # text cannot hold NUL
VALUES = st.one_of(
    st.integers(-(2**15), 2**15 - 1).map(lambda v: (f"({v})::int2", "int2")),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: (f"({v})::int8", "int8")),
    st.decimals(allow_nan=True, allow_infinity=True, places=None).filter(
        lambda d: not d.is_snan() and not (d.is_nan() and d.is_signed()) and (d.is_nan() or d.is_infinite() or abs(d.adjusted()) < 1000)).map(
        lambda d: (f"{literal(str(d))}::numeric", "numeric")),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: (f"{literal(repr(f))}::float8", "float8")),
    st.floats(width=32).map(lambda f: (f"{literal(repr(f))}::float4", "float4")),
    st.text(NO_NUL).map(
        lambda t: (f"{literal(t)}::text", "text")),
    st.binary(max_size=64).map(lambda b: (f"'\\x{b.hex()}'::bytea", "bytea")),
    # every day Postgres can hold: 4713 BC to 5874897 AD
    st.integers(-2_451_545, 2_145_031_948).map(lambda d: (f"('2000-01-01'::date + {d})", "date")),
    # timestamps: 4713 BC to 294276 AD, to the microsecond (a margin at the ends for the session's zone)
    st.tuples(st.integers(-2_451_000, 106_751_000), st.integers(0, US_PER_DAY - 1),
              st.sampled_from(["timestamp", "timestamptz"])).map(
        lambda p: (f"('2000-01-01'::timestamp + make_interval(days => {p[0]}) "
                   f"+ {p[1]} * interval '1 microsecond')::{p[2]}", p[2])),
    st.integers(0, US_PER_DAY).map(lambda us: (f"('00:00'::time + {us} * interval '1 microsecond')", "time")),
    st.tuples(st.integers(-(2**31) + 2, 2**31 - 2), st.integers(-(2**31) + 2, 2**31 - 2),
              st.integers(-(2**50), 2**50)).map(
        lambda p: (f"make_interval(months => {p[0]}, days => {p[1]}) + {p[2]} * interval '1 microsecond'",
                   "interval")),
    st.recursive(st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.text(NO_NUL, max_size=5),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(NO_NUL, max_size=3), inner, max_size=3),
                 max_leaves=10).map(lambda v: (f"{literal(json.dumps(v))}::jsonb", "jsonb")),
    st.tuples(st.integers(-1000, 1000), st.integers(0, 1000)).map(
        lambda p: (f"int4range({p[0]}, {p[0] + p[1]})", "int4range")),
    st.integers(0, 2**64 - 1).map(lambda v: (f"'{v >> 32:X}/{v & 0xFFFFFFFF:X}'::pg_lsn", "pg_lsn")),
    st.integers(1, 127).map(lambda b: (f"chr({b})::\"char\"", '"char"')),
    st.tuples(st.floats(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False)).map(
        lambda p: (f"'({p[0]!r},{p[1]!r})'::point", "point")),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(VALUES)
def test_every_value_round_trips_through_json(gateway: httpx.Client, case: tuple[str, str]) -> None:
    expression, type_name = case
    assert_round_trips(gateway, expression, type_name)


def test_a_json_number_beyond_a_double_keeps_its_digits_as_a_string(gateway: httpx.Client) -> None:
    [[value]] = sql(gateway, "SELECT '[1e400, 0.5]'::json")
    assert value == ["1e400", 0.5]


def test_floats_are_finite_json_numbers_or_postgres_words(gateway: httpx.Client) -> None:
    [[nan, inf, one]] = sql(gateway, "SELECT 'NaN'::float8, '-Infinity'::float8, 1.5::float8")
    assert (nan, inf, one) == ("NaN", "-Infinity", 1.5) and math.isfinite(one)
