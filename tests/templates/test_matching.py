"""Matching a question against templates (gateway.templates, no I/O): precise by construction. A wrong template
answer is worse than none, so anything short of one exact, valid, unambiguous reading is no match."""

from __future__ import annotations

import doctest

import pytest

import gateway.promote
import gateway.templates
from gateway.templates import (
    DefinitionError,
    Parameter,
    Template,
    ValueOutOfDomain,
    check_questions,
    check_value,
    match_question,
)

STATUS = Parameter("status", "orders.status", "text", "shipped")
CHANNEL = Parameter("channel", "orders.channel", "text", "web")
KNOWN = {"orders.status": ["shipped", "pending", "cancelled"], "orders.channel": ["web", "mobile", "phone"],
         "regions.name": ["North America", "Western Europe"]}


def template(name: str, questions: tuple[str, ...], *params: Parameter) -> Template:
    return Template(name, "demo", "SELECT 1", params, check_questions(questions, params))


def test_doctests() -> None:
    assert doctest.testmod(gateway.templates).failed == 0
    assert doctest.testmod(gateway.promote).failed == 0


@pytest.mark.parametrize("question, expected", [
    ("How many orders are shipped?", {"status": "shipped"}),
    ("  how   many ORDERS are 'Pending'  ", {"status": "pending"}),
    ("How many orders are \"cancelled\"!", {"status": "cancelled"}),
    ("How many orders are delivered?", None),  # not a value of the column
    ("How many orders are shipped last year?", None),  # more words
    ("How many orders are shipped or pending?", None),  # a value and more
    ("How many orders were shipped?", None),  # another word outside the slot
    ("How many orders are?", None),  # the slot empty
    ("How many orders are shipped? DROP TABLE orders", None),
])
def test_only_the_exact_wording_with_a_known_value_matches(question: str, expected: dict[str, str] | None) -> None:
    t = template("by_status", ("How many orders are {status}?",), STATUS)
    found = match_question(question, [t], KNOWN)
    assert (found[1] if found else None) == expected


def test_two_templates_that_both_fit_answer_nothing() -> None:
    a = template("a", ("Count the {status} orders",), STATUS)
    b = template("b", ("Count the {channel} orders",), CHANNEL)
    assert match_question("Count the web orders", [a, b], KNOWN) == (b, {"channel": "web"})
    # A value both columns hold: two readings, no answer.
    both = {**KNOWN, "orders.channel": ["web", "shipped"]}
    assert match_question("Count the shipped orders", [a, b], both) is None
    # The caller may not use one of them: the other answers.
    assert match_question("Count the shipped orders", [a, b], both, usable=lambda t: t.name == "a") == (
        a, {"status": "shipped"})


def test_two_slots_that_could_split_two_ways_answer_nothing() -> None:
    free = Parameter("who", "customers.name", "text", "Ann")
    place = Parameter("city", "customers.city", "text", "Rome")
    t = template("t", ("Orders of {who} in {city}",), free, place)
    # Free text columns (no known values): "Ann in Paris in Rome" reads two ways.
    assert match_question("Orders of Ann in Rome", [t], {}) == (t, {"city": "Rome", "who": "Ann"})
    assert match_question("Orders of Ann in Paris in Rome", [t], {}) is None


def test_definitions_refuse_what_cannot_match_precisely() -> None:
    with pytest.raises(DefinitionError, match="exactly once"):
        check_questions(["How many orders?"], [STATUS])
    with pytest.raises(DefinitionError, match="nothing between"):
        check_questions(["Orders {status}{channel}"], [STATUS, CHANNEL])
    with pytest.raises(DefinitionError, match="two words"):
        check_questions(["{status} orders"], [STATUS])
    # Spelling the default is the same as the slot.
    assert check_questions(["How many orders are shipped?"], [STATUS]) == ("How many orders are {status}",)


@pytest.mark.parametrize("kind, column_type, raw, expected", [
    ("integer", "smallint", "32767", "32767"),
    ("integer", "smallint", "32768", None),
    ("integer", "integer", " 7 ", "7"),
    ("integer", "integer", "٣", None),  # another script's digit: Postgres would refuse it
    ("integer", "integer", "1_000", None),
    ("number", "numeric(10,2)", "2.5", "2.5"),
    ("number", "numeric(10,2)", "NaN", None),
    ("boolean", "boolean", "Yes", "true"),
    ("boolean", "boolean", "maybe", None),
    ("text", "text", "x" * 201, None),
])
def test_values_are_checked_against_the_column_type(kind: str, column_type: str, raw: str,
                                                    expected: str | None) -> None:
    p = Parameter("p", "t.c", kind, None)  # type: ignore[arg-type]
    if expected is None:
        with pytest.raises(ValueOutOfDomain):
            check_value(p, raw, column_type, None)
    else:
        assert check_value(p, raw, column_type, None) == expected


def test_a_question_built_to_be_ambiguous_is_no_match_and_costs_a_bounded_walk() -> None:
    # Each "{slot}" between repeated words multiplies the readings: a regular expression backtracked over them
    # for minutes (found by the attacker's review); the walk stops at SPLITS_EXPLORED and reads nothing.
    from gateway.templates import SPLITS_EXPLORED, _splits

    example = "orders from {a} in {b} by {c} per {d}"
    assert _splits("orders from a in b by c per d", example) == [{"a": "a", "b": "b", "c": "c", "d": "d"}]
    for repeats in (20, 40, 400):
        asked = "orders from " + "a in b by c per " * repeats + "x"
        found = _splits(asked, example)
        assert len(found) <= SPLITS_EXPLORED and (repeats == 20 or found == [])
