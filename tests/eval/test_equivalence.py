"""Execution equivalence: every edge case of EX scoring, one test each."""

from __future__ import annotations

import decimal
import doctest

import pytest

from gateway.sql import equivalence
from gateway.sql.equivalence import gold_is_ordered, normalize_cell, same_result


def same(gold, pred, *, ordered=False, extra=False, gold_cols=None, pred_cols=None) -> bool:
    gold_cols = gold_cols if gold_cols is not None else [f"g{i}" for i in range(len(gold[0]) if gold else 1)]
    pred_cols = pred_cols if pred_cols is not None else [f"p{i}" for i in range(len(pred[0]) if pred else 1)]
    return same_result(gold_cols, gold, pred_cols, pred, ordered=ordered, allow_extra_columns=extra)


def test_doctests_pass() -> None:
    assert doctest.testmod(equivalence).failed == 0


# -- ordering ---------------------------------------------------------------------------------------------

def test_unordered_gold_accepts_any_row_order() -> None:
    assert same([[1, "a"], [2, "b"]], [[2, "b"], [1, "a"]], ordered=False)


def test_ordered_gold_rejects_a_different_row_order() -> None:
    assert not same([[1, "a"], [2, "b"]], [[2, "b"], [1, "a"]], ordered=True)
    assert same([[1, "a"], [2, "b"]], [[1, "a"], [2, "b"]], ordered=True)


def test_ordered_comparison_still_requires_the_same_rows() -> None:
    assert not same([[1], [2]], [[1], [3]], ordered=True)


# -- duplicates -------------------------------------------------------------------------------------------

def test_duplicates_count() -> None:
    assert not same([[1], [1], [2]], [[1], [2]])
    assert not same([[1], [2]], [[1], [1], [2]])
    assert not same([[1], [1], [2]], [[1], [2], [2]])  # same set, same length, different multiset
    assert same([[1], [1], [2]], [[2], [1], [1]])


# -- NULLs ------------------------------------------------------------------------------------------------

def test_null_equals_null_and_nothing_else() -> None:
    assert same([[None, 1]], [[None, 1]])
    assert not same([[None]], [[0]])
    assert not same([[None]], [[""]])
    assert not same([[None]], [["NULL"]])
    assert not same([[None]], [[False]])


# -- numbers ----------------------------------------------------------------------------------------------

def test_float_noise_is_absorbed() -> None:
    assert same([[0.3]], [[0.1 + 0.2]])
    assert same([[2.0 / 3.0]], [["0.66666666666666666667"]])  # float vs Postgres numeric text


def test_real_numeric_differences_are_not_absorbed() -> None:
    assert not same([[0.3]], [[0.31]])
    assert not same([[12.5]], [[12.51]])
    assert not same([[1.5]], [[2]])


def test_integral_digits_are_never_rounded_away() -> None:
    # 6 significant digits must not make two different large counts or ids equal
    assert not same([[1234567]], [[1234568]])
    assert not same([[10_000_001]], [[10_000_000.0]])
    assert same([[10_000_001]], [["10000001.00"]])


def test_numeric_strings_compare_with_ints_and_floats() -> None:
    assert same([["42"]], [[42]])
    assert same([["12.50"]], [[12.5]])
    assert same([[decimal.Decimal("3.000")]], [[3]])
    assert same([["1e3"]], [[1000]])
    assert same([[-0.0]], [[0]])


def test_non_numeric_strings_stay_strings() -> None:
    assert not same([["12 apples"]], [[12]])
    assert not same([["1,000"]], [[1000]])
    assert same([["2024-01-05"]], [["2024-01-05"]])
    assert not same([["2024-01-05"]], [["2024-01-06"]])


def test_booleans_are_not_numbers() -> None:
    assert not same([[True]], [[1]])
    assert not same([[False]], [[0]])
    assert same([[True]], [[True]])


def test_non_finite_floats_match_their_gateway_text() -> None:
    assert normalize_cell(float("nan")) == normalize_cell("nan")
    assert not same([[float("inf")]], [[1e308]])


def test_json_documents_and_arrays_compare_by_value() -> None:
    assert same([[{"a": 1, "b": [1, "2.0"]}]], [[{"b": [1.0, 2], "a": "1"}]])
    assert not same([[[1, 2]]], [[[2, 1]]])


# -- column names and order --------------------------------------------------------------------------------

def test_column_names_are_ignored() -> None:
    assert same_result(["total"], [[5]], ["sum"], [[5]], ordered=False)


def test_permuted_columns_are_accepted() -> None:
    gold = [["alice", 3, 10.5], ["bob", 1, 2.0]]
    pred = [[10.5, "alice", 3], [2.0, "bob", 1]]
    assert same(gold, pred)
    assert same(gold, [pred[0], pred[1]], ordered=True)


def test_permutation_must_keep_values_on_their_rows() -> None:
    # each column has the same values, but no permutation of columns reproduces the gold's rows
    gold = [[1, "x"], [2, "y"]]
    pred = [["y", 1], ["x", 2]]
    assert not same(gold, pred)


def test_permutation_with_identical_columns() -> None:
    # two columns with the same values: any permutation works; the answer is still the same relation
    gold = [[1, 1, "a"], [2, 2, "b"]]
    pred = [["a", 1, 1], ["b", 2, 2]]
    assert same(gold, pred)


def test_matching_column_values_but_different_pairs_are_rejected() -> None:
    gold = [[1, 2], [3, 4]]
    pred = [[1, 4], [3, 2]]  # each column holds the gold's values, but the pairs differ
    assert not same(gold, pred)


def test_ordered_with_permuted_columns_checks_sequence() -> None:
    gold = [["a", 1], ["b", 2]]
    assert same(gold, [[1, "a"], [2, "b"]], ordered=True)
    assert not same(gold, [[2, "b"], [1, "a"]], ordered=True)


# -- extra / missing columns ---------------------------------------------------------------------------------

def test_extra_columns_rejected_unless_allowed() -> None:
    gold = [["alice"], ["bob"]]
    pred = [[1, "alice", 30], [2, "bob", 40]]
    assert not same(gold, pred)
    assert same(gold, pred, extra=True)


def test_extra_columns_still_require_the_gold_columns() -> None:
    gold = [["alice", 30], ["bob", 40]]
    assert not same(gold, [[1, "alice", 31], [2, "bob", 40]], extra=True)
    assert same(gold, [[40, 2, "bob"], [30, 1, "alice"]], extra=True)


def test_extra_columns_do_not_excuse_extra_rows() -> None:
    # projecting onto the gold's columns does not deduplicate: a row per order is not a row per customer
    gold = [["alice"], ["bob"]]
    pred = [["alice", 1], ["alice", 2], ["bob", 3]]
    assert not same(gold, pred, extra=True)


def test_missing_columns_are_never_accepted() -> None:
    assert not same([["alice", 30]], [["alice"]], extra=True)


# -- shapes -----------------------------------------------------------------------------------------------

def test_empty_results() -> None:
    assert same_result(["a"], [], ["b"], [], ordered=False)
    assert not same_result(["a"], [], ["b"], [[1]], ordered=False)
    assert not same_result(["a"], [[1]], ["b"], [], ordered=False)
    assert not same_result(["a"], [], ["b", "c"], [], ordered=False)
    assert same_result(["a"], [], ["b", "c"], [], ordered=False, allow_extra_columns=True)


def test_column_objects_and_dicts_are_accepted_as_columns() -> None:
    assert same_result([{"name": "n", "type": "int8"}], [[1]], [object()], [[1]], ordered=False)


def test_ragged_rows_are_an_error() -> None:
    with pytest.raises(ValueError):
        same_result(["a", "b"], [[1]], ["a", "b"], [[1, 2]], ordered=False)


def test_search_is_bounded_for_many_interchangeable_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # every column holds {1, 2}, so every one of the 8! mappings passes the per-column filter, yet no
    # mapping reproduces the gold's rows: the search must stop at MAX_MAPPINGS and answer "different"
    tried = []
    original = equivalence._shape

    def counting_shape(rows, ordered, blocks=None):
        tried.append(1)
        return original(rows, ordered, blocks)

    monkeypatch.setattr(equivalence, "_shape", counting_shape)
    gold = [[1] * 8, [2] * 8]
    pred = [[1, 2] * 4, [2, 1] * 4]
    assert not same(gold, pred)
    assert len(tried) == equivalence.MAX_MAPPINGS + 1  # +1: the gold's own shape


# -- gold_is_ordered --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT name FROM customers ORDER BY name", True),
        ("select name from customers order by 1 desc limit 5", True),
        ("SELECT name FROM customers", False),
        ("WITH t AS (SELECT name FROM customers ORDER BY name) SELECT name FROM t", False),
        ("WITH t AS (SELECT name FROM customers) SELECT name FROM t ORDER BY name", True),
        ("SELECT * FROM (SELECT name FROM customers ORDER BY name LIMIT 3) s", False),
        ("SELECT name, row_number() OVER (ORDER BY name) FROM customers", False),
        ("SELECT string_agg(name, ',' ORDER BY name) FROM customers", False),
        ("SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a", True),
        ("SELECT a FROM t UNION ALL SELECT a FROM u", False),
        ("(SELECT a FROM t ORDER BY a)", True),
        ("this is not sql at all (", False),
    ],
)
def test_gold_is_ordered(sql: str, expected: bool) -> None:
    assert gold_is_ordered(sql) is expected


# -- the public benchmarks' conventions (gateway.eval.score reports all three) -----------------------------

def verdict(gold_rows: list[list[object]], pred_rows: list[list[object]], *, question: str = "List them",
            gold_sql: str = "SELECT a FROM t", n_gold: int = 1, n_pred: int = 1) -> dict[str, bool]:
    from gateway.eval.score import Gold, GoldResult, score

    gold = Gold([GoldResult(gold_sql, [f"g{i}" for i in range(n_gold)], gold_rows, gold_is_ordered(gold_sql),
                            equivalence.order_key_columns(gold_sql))])
    return score(gold, [f"p{i}" for i in range(n_pred)], pred_rows, question=question).as_dict()


def test_defog_drops_duplicates_and_allows_extra_columns_bird_compares_sets() -> None:
    assert verdict([[1], [2]], [[2, "y"], [1, "x"], [1, "x"]], n_pred=2) == {
        "strict": False, "extra": False, "defog": True, "bird": False}
    assert verdict([[1], [2]], [[2], [1], [1]]) == {"strict": False, "extra": False, "defog": True, "bird": True}
    assert verdict([[1], [2]], [[2], [1]]) == {"strict": True, "extra": True, "defog": True, "bird": True}


def test_defog_compares_order_only_when_the_question_asks_for_it() -> None:
    ordered = "SELECT a FROM t ORDER BY a"
    assert verdict([[1], [2]], [[2], [1]], gold_sql=ordered, question="Which values are there?") == {
        "strict": False, "extra": False, "defog": True, "bird": True}
    assert verdict([[1], [2]], [[2], [1]], gold_sql=ordered, question="Sort the values")["defog"] is False


def test_bird_keeps_the_column_order() -> None:
    swapped = verdict([[1, "a"]], [["a", 1]], n_gold=2, n_pred=2)
    assert swapped == {"strict": True, "extra": True, "defog": True, "bird": False}


# -- order modulo ties --------------------------------------------------------------------------------------

def test_rows_tied_on_the_gold_sort_key_may_come_in_any_order_among_themselves() -> None:
    gold = [["a", 3], ["b", 2], ["c", 2], ["d", 2], ["e", 1]]
    cols = ["k", "n"]
    tied_swapped = [["a", 3], ["d", 2], ["b", 2], ["c", 2], ["e", 1]]
    assert same_result(cols, gold, cols, tied_swapped, ordered=True, order_key=[1])
    assert not same_result(cols, gold, cols, tied_swapped, ordered=True)  # no key known: the whole sequence
    # a row moved across a change of the key is a different order
    across = [["b", 2], ["a", 3], ["c", 2], ["d", 2], ["e", 1]]
    assert not same_result(cols, gold, cols, across, ordered=True, order_key=[1])
    # a tie block holding other rows (same size) is a different result
    assert not same_result(cols, gold, cols, [["a", 3], ["b", 2], ["c", 2], ["x", 2], ["e", 1]], ordered=True,
                           order_key=[1])
    # ties are the gold's key's: the prediction's values in that column must still be the gold's
    assert not same_result(cols, gold, cols, [["a", 3], ["c", 2], ["b", 2], ["d", 1], ["e", 2]], ordered=True,
                           order_key=[1])


def test_ties_follow_the_column_mapping_of_a_permuted_prediction() -> None:
    gold = [["a", 2], ["b", 2], ["c", 1]]
    assert same_result(["k", "n"], gold, ["n", "k"], [[2, "b"], [2, "a"], [1, "c"]], ordered=True, order_key=[1])
    assert not same_result(["k", "n"], gold, ["n", "k"], [[1, "c"], [2, "b"], [2, "a"]], ordered=True,
                           order_key=[1])


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT name, count(*) AS n FROM t GROUP BY name ORDER BY n DESC", [1]),
        ("SELECT name, count(*) FROM t GROUP BY name ORDER BY count(*) DESC, name", [1, 0]),
        ("SELECT name, total FROM t ORDER BY 2 DESC", [1]),
        ("SELECT t.name, t.total FROM t ORDER BY t.total", [1]),
        ("SELECT name FROM t ORDER BY created_at", None),  # the key is not an output: ties cannot be seen
        ("SELECT name FROM t", None),
        ("SELECT a FROM t UNION SELECT a FROM u ORDER BY 1", [0]),
        ("(SELECT a, b FROM t ORDER BY b)", [1]),
        ("not sql (", None),
    ],
)
def test_order_key_columns(sql: str, expected: list[int] | None) -> None:
    assert equivalence.order_key_columns(sql) == expected


def test_strict_ex_compares_order_modulo_the_gold_ties() -> None:
    gold_sql = "SELECT brand, count(*) AS products FROM products GROUP BY brand ORDER BY products DESC"
    gold = [["A", 3], ["B", 2], ["C", 2]]
    assert verdict(gold, [["A", 3], ["C", 2], ["B", 2]], gold_sql=gold_sql, n_gold=2, n_pred=2)["strict"]
    assert not verdict(gold, [["B", 2], ["A", 3], ["C", 2]], gold_sql=gold_sql, n_gold=2, n_pred=2)["strict"]
