"""Row-policy values (a principal's claims) as Postgres sees them.

Two uses, both fail closed:

- **"Postgres decides"**: every claim becomes the transaction-local setting ``nl2sql.<name>`` in the batch
  that opens the READ ONLY transaction (:func:`settings_sql`), so the database's own row-level security
  policies filter rows (``current_setting('nl2sql.tenant_id', true)``). The value comes from a token, so an
  attacker chooses it: it travels as hex digits decoded by the server, and nothing the value holds (quotes,
  backslashes, dollar signs, unicode) is ever read as SQL, whatever ``standard_conforming_strings`` says.
- **"The gateway decides"**: the rules' row filters bind claims as query parameters (``$n``); Postgres infers
  each parameter's type from the filter, and :func:`bind` turns the text value into what the driver needs
  for that type.

>>> "pg_catalog.decode('3127', 'hex')" in settings_sql((("tenant_id", "1'"),))
True
>>> bind(["42", "x"], ["int4", "text"])
[42, 'x']
"""

from __future__ import annotations

import decimal
import re
import uuid
from collections.abc import Sequence
from typing import Any

from gateway import errors

NAME = re.compile(r"[a-z_][a-z0-9_]*")
MAX_NAME_CHARS = 63  # Postgres truncates longer identifiers: two names could end up one setting
MAX_VALUE_CHARS = 1024  # a tenant id, a region list; anything longer is refused, not truncated
PREFIX = "nl2sql."


def check_claims(claims: Sequence[tuple[str, str]]) -> None:
    """Raise ``row_policy_claim_invalid`` for a name outside ``[a-z_][a-z0-9_]*`` (at most 63 characters) or a
    value that is not text, holds NUL or exceeds ``MAX_VALUE_CHARS``; the same name twice is refused too."""
    seen: set[str] = set()
    for name, value in claims:
        if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > MAX_NAME_CHARS:
            raise errors.RowPolicyClaimInvalid(
                f"row-policy name {name!r} is not allowed: use lower-case letters, digits and _ "
                f"([a-z_][a-z0-9_]*, at most {MAX_NAME_CHARS} characters)", claim=str(name)[:80])
        if name in seen:
            raise errors.RowPolicyClaimInvalid(f"row-policy value {name!r} is given twice", claim=name)
        seen.add(name)
        if not isinstance(value, str) or "\x00" in value or len(value) > MAX_VALUE_CHARS:
            raise errors.RowPolicyClaimInvalid(
                f"row-policy value {name!r} must be text without NUL, at most {MAX_VALUE_CHARS} characters",
                claim=name)


def settings_sql(claims: Sequence[tuple[str, str]]) -> str:
    """The statements that set each claim as ``nl2sql.<name>`` for the current transaction only ("" when none).

    Names are checked again here (:func:`check_claims`): this text joins the BEGIN batch, which runs as a
    simple query. Functions are schema-qualified so that nothing on the search_path can stand in for them."""
    check_claims(claims)
    parts = []
    for name, value in claims:
        hexed = value.encode("utf-8").hex()
        parts.append(f"SELECT pg_catalog.set_config('{PREFIX}{name}', pg_catalog.convert_from("
                     f"pg_catalog.decode('{hexed}', 'hex'), 'UTF8'), true)")
    return ";\n".join(parts)


_INTEGER = frozenset({"int2", "int4", "int8", "oid"})
_TEXT = frozenset({"text", "varchar", "bpchar", "name", "citext", "unknown"})
_FLOAT = frozenset({"float4", "float8"})
_BOOL = {"true": True, "t": True, "1": True, "yes": True, "false": False, "f": False, "0": False, "no": False}


def bind(values: Sequence[str], types: Sequence[str]) -> list[Any]:
    """The claim values as the driver encodes parameters of ``types`` (the names Postgres inferred for each
    ``$n``); ``row_policy_claim_invalid`` when a value does not fit its type or the type is not one a claim
    may be compared with (text, integers, numeric, floats, boolean, uuid)."""
    out: list[Any] = []
    for n, (value, type_name) in enumerate(zip(values, types, strict=True), start=1):
        try:
            out.append(_convert(value, type_name))
        except (ValueError, ArithmeticError) as exc:
            raise errors.RowPolicyClaimInvalid(
                f"a row-policy value does not fit parameter ${n} of the row filter (type {type_name}): {exc}",
                parameter=n, type=type_name) from None
    return out


# ASCII only, as Postgres reads numbers: Python's int() and Decimal() also take "1_0" and other scripts'
# digits ("١"), which would turn a value Postgres refuses into another tenant's id.
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _convert(value: str, type_name: str) -> Any:
    if type_name in _TEXT:
        return value
    text = value.strip(" ")
    if type_name in _INTEGER:
        if not _INTEGER_TEXT.fullmatch(text):
            raise ValueError(f"not an integer: {value[:40]!r}")
        return int(text)
    if type_name in _FLOAT | {"numeric"}:
        if not _NUMBER_TEXT.fullmatch(text):
            raise ValueError(f"not a number: {value[:40]!r}")
        return decimal.Decimal(text) if type_name == "numeric" else float(text)
    if type_name == "bool":
        return _BOOL[value.strip().lower()] if value.strip().lower() in _BOOL else _no(value, type_name)
    if type_name == "uuid":
        return uuid.UUID(value.strip())
    raise ValueError(f"claims cannot be compared with a {type_name} (cast the column in the row filter)")


def _no(value: str, type_name: str) -> Any:
    raise ValueError(f"not a {type_name}")
