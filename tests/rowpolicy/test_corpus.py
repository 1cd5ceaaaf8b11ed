"""The corpus (corpus.sql), run for tenant 1 in both row-policy modes.

Postgres's own RLS ("Postgres decides") is the oracle: the gateway's rewrite ("the gateway decides") must
return exactly the same rows for every allowed statement, and neither may return anything of tenant 2.
"""

from __future__ import annotations

import decimal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gateway import Gateway, errors
from tests.rowpolicy.conftest import tenant

CORPUS = Path(__file__).parent / "corpus.sql"


def load() -> list[tuple[str, str, str | None]]:
    cases: list[tuple[str, str, str | None]] = []
    name: str | None = None
    expect: str | None = None
    lines: list[str] = []
    for line in CORPUS.read_text().splitlines() + ["-- case: <end>"]:
        if line.startswith("-- case:"):
            if name is not None:
                cases.append((name, "\n".join(lines).strip(), expect))
            name, expect, lines = line[8:].strip(), None, []
        elif line.startswith("-- expect:"):
            expect = line.split(":", 1)[1].strip()
        elif name is not None:
            lines.append(line)
    return cases


CASES = load()
ALLOWED = [c for c in CASES if c[2] is None]
REFUSED = [c for c in CASES if c[2] is not None]


def leaks(value: Any) -> list[Any]:
    """Tenant 2's marks in one returned value: TENANT2 in text, ids, amounts and quantities from 1000 up."""
    if isinstance(value, str):
        return [value] if "TENANT2" in value else []
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float, decimal.Decimal)):
        return [value] if value >= 1000 else []
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaks(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in leaks(v)]
    return leaks(str(value))


def shape(value: Any) -> Any:
    """A whole-row value of a table comes back as an object (a named row type), of the filtered derived
    table as a list (an anonymous record): same fields in the same order, so compare the values."""
    if isinstance(value, dict):
        return [shape(v) for v in value.values()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return value


def bag(rows: list[list[Any]]) -> Counter[str]:
    return Counter(repr(shape(r)) for r in rows)


def test_the_corpus_is_large_enough() -> None:
    assert len(ALLOWED) >= 100 and len(REFUSED) >= 10


@pytest.mark.parametrize(("name", "sql", "expect"), ALLOWED, ids=[c[0] for c in ALLOWED])
async def test_both_modes_agree_and_never_show_tenant_2(gw: Gateway, name: str, sql: str, expect: None) -> None:
    rls = await gw.sql("rls", sql, principal=tenant("1"))
    filtered = await gw.sql("filters", sql, principal=tenant("1"))
    for rows in (rls.result.rows, filtered.result.rows):
        assert not [x for r in rows for x in leaks(r)], rows
    assert bag(filtered.result.rows) == bag(rls.result.rows)
    assert [c.name for c in filtered.result.columns] == [c.name for c in rls.result.columns]


@pytest.mark.parametrize(("name", "sql", "expect"), REFUSED, ids=[c[0] for c in REFUSED])
async def test_what_the_rewrite_cannot_filter_is_refused(gw: Gateway, name: str, sql: str, expect: str) -> None:
    with pytest.raises(errors.SqlBlocked) as raised:
        await gw.sql("filters", sql, principal=tenant("1"))
    assert expect in raised.value.extra["codes"]
    verdict = gw.check(sql, "filters", principal=tenant("1"))
    assert not verdict["allowed"] and expect in verdict["codes"]


async def test_tenant_2_sees_its_own_rows_in_both_modes(gw: Gateway) -> None:
    """The filters bind the caller's value: the same statement for tenant 2 returns tenant 2's rows."""
    sql = "SELECT order_id FROM orders ORDER BY order_id"
    for database in ("rls", "filters"):
        out = await gw.sql(database, sql, principal=tenant("2"))
        assert out.result.rows == [[1010], [1011], [1012], [1013]]
