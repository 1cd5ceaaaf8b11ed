"""SQL extraction from LLM answers, SQL normalization, and the result checks (no database needed)."""

from __future__ import annotations

import doctest

import pytest

import gateway.pipeline.generate
import gateway.pipeline.sqlshape
import gateway.pipeline.validate
from gateway.pipeline.generate import extract_sql, normalize_sql, strip_trailing_semicolons
from gateway.pipeline.sqlshape import shape_of_sql
from gateway.pipeline.validate import Finding, ResultView, check_result, shape_of, triggers
from gateway.settings import AskPolicy


@pytest.mark.parametrize("module", [gateway.pipeline.generate, gateway.pipeline.validate, gateway.pipeline.sqlshape])
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
    # rankings and statistics that mention a number are not counts
    ("List the top 3 publications with the highest number of citations", False, False),
    ("Which author has the largest number of papers?", False, False),
    ("Rank the regions by number of customers", False, False),
    ("What is the total number of orders?", True, False),
    ("List each customer and how many orders they placed", False, True),
    ("What is the average number of items per order?", False, False),
    ("What is the average order value per channel?", False, True),
])
def test_question_shape(question: str, count: bool, grouped: bool) -> None:
    shape = shape_of(question)
    assert (shape.count, shape.grouped) == (count, grouped)


def codes(question: str, rows: list[list[object]], columns: tuple[str, ...] = ("a", "b"),
          truncated: bool = False, sql: str = "SELECT a, b FROM t") -> list[str]:
    return [f.code for f in check_result(ResultView(question, columns, rows, truncated, shape_of_sql(sql)))]


def test_result_checks() -> None:
    assert codes("List orders", []) == ["empty_result"]
    assert codes("List orders", [[1, 2], [3, 4]]) == []
    assert codes("How many orders?", [[1, 2], [3, 4]]) == ["count_mismatch"]
    assert codes("How many orders?", [[10, 1]]) == []
    assert codes("How many orders per region?", [[1, 2], [3, 4]]) == []
    assert codes("List orders", [[1, 2]], truncated=True) == ["truncated"]


def test_a_ranking_by_a_number_is_not_a_count() -> None:
    rows: list[list[object]] = [["A", 30], ["B", 20], ["C", 10]]
    sql = "SELECT title, n FROM p ORDER BY n DESC LIMIT 3"
    assert codes("List the top 3 publications with the highest number of citations", rows, sql=sql) == []


def test_grouping_mismatch_only_when_the_sql_collapses_every_row() -> None:
    question = "What was the revenue for each month of 2024?"
    # forgot to group: one row because the aggregate swallowed every month
    assert codes(question, [[100]], ("revenue",), sql="SELECT sum(x) FROM t") == ["grouping_mismatch"]
    # grouped, and the data holds one month: the engine counted the groups, that is the answer
    assert codes(question, [["2024-03", 100]], sql="SELECT m, sum(x) FROM t GROUP BY m") == []
    # a projection of one matching row is per-row already
    assert codes("Show each employee's manager", [["Ann", "Bob"]], sql="SELECT e.n, m.n FROM e JOIN e m ON true") == []
    # an unreadable statement: no structure, no finding
    assert codes(question, [[100]], ("revenue",), sql="SELECT FROM WHERE (") == []


def test_duplicates_only_matter_when_distinct_values_are_asked_for() -> None:
    rows: list[list[object]] = [[1, {"k": [1]}], [1, {"k": [1]}], [2, 3]]
    assert codes("List the cities of customers", rows) == []  # a projection repeats what the data holds
    assert codes("List the distinct cities of customers", rows) == ["duplicate_rows"]


def test_nulls_are_a_symptom_only_from_the_optional_side_of_an_outer_join() -> None:
    left = "SELECT o.id, p.amount FROM orders o LEFT JOIN payments p ON p.id = o.id"
    assert codes("List orders and payments", [[1, None], [2, None]], sql=left) == ["null_heavy"]
    assert codes("List orders and payments", [[1, None], [2, 5]], sql=left) == []
    # NULLs the data holds (an optional attribute) are the answer
    assert codes("List discount codes", [[1, None], [2, None]], sql="SELECT id, code FROM orders") == []
    assert codes("List discount codes", [[None, None], [1, None]], sql="SELECT id, code FROM orders") == []


def test_an_aggregate_over_no_matching_rows_is_a_finding() -> None:
    def agg(rows: list[list[object]], sql: str) -> list[str]:
        return codes("How many orders were cancelled?", rows, ("n",), sql=sql)

    assert agg([[0]], "SELECT count(*) FROM orders WHERE status = 'Cancelled'") == ["empty_aggregate"]
    assert agg([[None]], "SELECT avg(total) FROM orders WHERE status = 'x'") == ["empty_aggregate"]
    assert agg([["0.00"]], "SELECT coalesce(sum(total), 0) FROM orders WHERE status = 'x'") == ["empty_aggregate"]
    assert agg([[12]], "SELECT count(*) FROM orders WHERE status = 'cancelled'") == []
    assert agg([[0]], "SELECT count(*) FROM orders") == []  # no filter: an empty table is the answer
    assert codes("Revenue per status", [["x", 0]], sql="SELECT s, count(*) FROM o WHERE a GROUP BY s") == []


def test_errors_blocks_and_missing_sql_always_trigger() -> None:
    nothing = AskPolicy(reflect_on=frozenset())
    found = [Finding(c, "") for c in ("exec_error", "blocked", "no_sql", "empty_result", "truncated")]
    assert triggers(found, nothing) == ["exec_error", "blocked", "no_sql"]
    assert triggers(found, AskPolicy(reflect_on=frozenset({"truncated"}))) == [
        "exec_error", "blocked", "no_sql", "truncated"]
