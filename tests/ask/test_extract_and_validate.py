"""SQL extraction from LLM answers, SQL normalization, and the result checks (no database needed)."""

from __future__ import annotations

import doctest

import pytest

import gateway.pipeline.generate
import gateway.pipeline.validate
from gateway.pipeline.generate import extract_sql, normalize_sql, strip_trailing_semicolons
from gateway.pipeline.validate import Finding, ResultView, check_result, shape_of, triggers
from gateway.settings import AskPolicy


@pytest.mark.parametrize("module", [gateway.pipeline.generate, gateway.pipeline.validate])
def test_doctests(module: object) -> None:
    assert doctest.testmod(module).failed == 0  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "expected"), [
    ("<sql>SELECT 1</sql>", "SELECT 1"),
    ("<SQL>\n  SELECT 1 ;  \n</SQL>", "SELECT 1"),
    ("<thinking>not <sql>SELECT 0</sql></thinking>\n<sql>SELECT 2</sql>", "SELECT 2"),
    ("<sql>SELECT 3 FROM t WHERE a = 'x</sql>", "SELECT 3 FROM t WHERE a = 'x"),  # broken, left to the check
    ("cut off: <sql>SELECT 4 FROM t", "SELECT 4 FROM t"),
    ("```sql\nSELECT a\nFROM t;\n```", "SELECT a\nFROM t"),
    ("```\nWITH x AS (SELECT 1) SELECT * FROM x\n```", "WITH x AS (SELECT 1) SELECT * FROM x"),
    ("```python\nprint(1)\n```", None),
    ("Final Answer: SELECT count(*) FROM t", "SELECT count(*) FROM t"),
    ("Here it is:\n\nselect a\nfrom t;\n\nThis lists a.", "select a\nfrom t"),
    ("(SELECT 1) UNION (SELECT 2)", "(SELECT 1) UNION (SELECT 2)"),
    ("Selection depends on the data.", None),
    ("", None),
    ("<sql>   </sql>", None),
    ("<sql>SELECT 1; DROP TABLE t;</sql>", "SELECT 1; DROP TABLE t;"),  # two statements: kept whole, blocked later
    ("<sql>SELECT ';' AS s;;</sql>", "SELECT ';' AS s"),
    ("<sql>SELECT $$a;b$$;</sql>", "SELECT $$a;b$$"),
])
def test_extract_sql(text: str, expected: str | None) -> None:
    assert extract_sql(text) == expected


def test_semicolons_inside_comments_and_strings_are_not_statement_ends() -> None:
    assert strip_trailing_semicolons("SELECT 1 -- a; b\n;") == "SELECT 1 -- a; b"
    assert strip_trailing_semicolons("SELECT 'it''s;' ;") == "SELECT 'it''s;'"


def test_normalize_sql() -> None:
    assert normalize_sql("SELECT a FROM t") == normalize_sql("select  A\nfrom T /* c */")
    assert normalize_sql("SELECT 'A'") != normalize_sql("SELECT 'a'")
    assert normalize_sql('SELECT "A"') != normalize_sql('SELECT "a"')
    assert normalize_sql("SELECT 'unterminated") == "SELECT 'unterminated"


@pytest.mark.parametrize(("question", "count", "grouped"), [
    ("How many orders were cancelled?", True, False),
    ("What is the number of customers?", True, False),
    ("How many orders per channel?", True, True),
    ("Revenue by month in 2024", False, True),
    ("Revenue broken down by region", False, True),
    ("How many orders were placed by customers in Germany?", True, False),
    ("List orders sorted by date", False, False),
    ("Which product sold the most, by far?", False, False),
    ("Show each employee's manager", False, True),
    ("Total revenue", False, False),
])
def test_question_shape(question: str, count: bool, grouped: bool) -> None:
    shape = shape_of(question)
    assert (shape.count, shape.grouped) == (count, grouped)


def codes(question: str, rows: list[list[object]], columns: tuple[str, ...] = ("a", "b"),
          truncated: bool = False) -> list[str]:
    return [f.code for f in check_result(ResultView(question, columns, rows, truncated))]


def test_result_checks() -> None:
    assert codes("List orders", []) == ["empty_result"]
    assert codes("List orders", [[1, 2], [3, 4]]) == []
    assert codes("List orders", [[1, None], [2, None]]) == ["null_heavy"]  # an all-NULL column
    assert codes("List orders", [[None, None], [1, None], [None, 2]]) == ["null_heavy"]
    assert codes("How many orders?", [[1, 2], [3, 4]]) == ["count_mismatch"]
    assert codes("How many orders?", [[10, 1]]) == []
    assert codes("Orders per region", [[10, 1]]) == ["grouping_mismatch"]
    assert codes("How many orders per region?", [[1, 2], [3, 4]]) == []
    assert codes("List orders", [[1, {"k": [1]}], [1, {"k": [1]}], [2, 3]]) == ["duplicate_rows"]
    assert codes("List orders", [[1, 2]], truncated=True) == ["truncated"]


def test_errors_blocks_and_missing_sql_always_trigger() -> None:
    nothing = AskPolicy(reflect_on=frozenset())
    found = [Finding(c, "") for c in ("exec_error", "blocked", "no_sql", "empty_result", "truncated")]
    assert triggers(found, nothing) == ["exec_error", "blocked", "no_sql"]
    assert triggers(found, AskPolicy(reflect_on=frozenset({"truncated"}))) == [
        "exec_error", "blocked", "no_sql", "truncated"]
