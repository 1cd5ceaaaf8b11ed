"""Benign client SQL that a second parser used to refuse, run on the real demo server: a comment after the
final ``;``, PostgreSQL 16 numeric literals, XMLTABLE's ``BY REF``. The server must read the one statement
the check read (the text runs exactly as checked), and what only looks like a trailing comment stays out."""

from __future__ import annotations

import asyncpg
import pytest

from gateway import errors
from gateway.safety import check, sqlglot_reading, statement
from gateway.service import Gateway
from tests.api.conftest import demo_settings

XML = "('<r><row id=\"7\"><a>x</a></row><row id=\"8\"><a>y</a></row></r>'::xml)"
COUNT = "SELECT count(*) FROM orders"


@pytest.fixture(scope="module")
async def gw(demo_dsn: str):  # type: ignore[no-untyped-def]
    conn = await asyncpg.connect(demo_dsn)
    try:
        version = conn.get_server_version().major
    finally:
        await conn.close()
    async with Gateway(demo_settings(demo_dsn)) as gateway:
        yield gateway, version


@pytest.mark.parametrize("text", [
    COUNT + "; -- done",
    COUNT + ";\n-- done\n",
    COUNT + "; /* done */ -- really",
    COUNT + " -- counted\n; -- done",
    COUNT + "; /* nested /* comment */ still inside; DROP TABLE orders; */",
    COUNT + "; -- done\u2028DROP TABLE orders",  # U+2028 does not end a Postgres line comment
    COUNT + "; -- done\rx",  # a CR ends the comment, but only for what follows; here 'x' must stay out
])
async def test_a_comment_after_the_final_semicolon_is_one_statement(gw, text: str) -> None:  # type: ignore[no-untyped-def]
    gateway, _ = gw
    if text.endswith("\rx"):
        with pytest.raises(errors.SqlBlocked):  # 'x' after CR is a second statement to Postgres
            await gateway.sql("demo", text)
        return
    out = await gateway.sql("demo", text)
    assert out.verdict.sql == text and out.verdict.allowed
    (before,) = out.result.rows
    again = await gateway.sql("demo", COUNT)
    assert again.result.rows == [before] and before[0] > 0  # the table is still there, untouched


async def test_postgres_16_numeric_literals_mean_what_postgres_says(gw) -> None:  # type: ignore[no-untyped-def]
    gateway, version = gw
    text = "SELECT 1_000_000 AS n, 0x1F AS h, 0o17 AS o, 0b101 AS b, 0X_1f AS u, 1_0.2_5 AS f; -- literals"
    assert check(text).allowed
    if version < 16:
        with pytest.raises(errors.QueryError):  # before 16 the server refuses them: never a silent reading
            await gateway.sql("demo", text)
        return
    out = await gateway.sql("demo", text)
    assert [str(v) for v in out.result.rows[0]] == ["1000000", "31", "15", "5", "31", "10.25"]


async def test_xmltable_by_ref_runs(gw) -> None:  # type: ignore[no-untyped-def]
    gateway, _ = gw
    text = (f"SELECT x.id, x.n, x.a FROM XMLTABLE('/r/row' PASSING BY REF {XML} BY REF COLUMNS id int PATH '@id', "
            "n FOR ORDINALITY, a text PATH 'a' DEFAULT '-' NOT NULL) AS x ORDER BY x.id")
    assert check(text).allowed
    try:
        out = await gateway.sql("demo", text)
    except errors.QueryError as exc:  # a server built without libxml parses and plans it, then says so
        assert str(exc).startswith("0A000"), exc
        return
    assert out.result.rows == [[7, 1, "x"], [8, 2, "y"]]


def _sqlglot_text(sql: str) -> str:
    stmt, findings = statement.read(sql)
    assert stmt is not None, findings
    return sqlglot_reading.query_text(sql, stmt)


def test_sqlglot_reads_postgres_statement_with_equivalent_spellings() -> None:
    assert _sqlglot_text("SELECT 1_000, 0x_1F, 0b101, 0o17, 1_5.0_1e1_0; -- x").split() == \
        ["SELECT", "1000", ",", "31", ",", "5", ",", "15", ",", "15.01e10"]
    assert _sqlglot_text("EXPLAIN SELECT 1; /* c */").strip() == "SELECT 1"
    # A column named ref after GROUP BY / ORDER BY is not XML's passing mechanism: kept.
    assert _sqlglot_text("SELECT ref FROM t GROUP BY ref ORDER BY ref").split()[-1] == "ref"
    assert "INT" in _sqlglot_text("SELECT * FROM XMLTABLE('/r' PASSING x COLUMNS n FOR ORDINALITY, b int) y")
    assert "FOR ordinality" in _sqlglot_text("SELECT substring(s FROM 1 FOR ordinality) FROM t")
    # Literals inside strings, dollar quotes and quoted names are not tokens: untouched.
    assert _sqlglot_text("SELECT '1_000', $$0x1F$$, \"1_0\" FROM t") == "SELECT '1_000', $$0x1F$$, \"1_0\" FROM t"
