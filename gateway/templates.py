"""Templates: what a DBA-approved parameterized SQL is, how its parameters are checked, how questions match.

A template has a name, SQL with ``$1 .. $n``, one parameter per ``$k`` (bound to a column, typed from it)
and example questions with ``{name}`` slots. This module does no I/O: the column types and the known values
come from the caller's view of the schema (:mod:`gateway.pipeline.trusted` reads them).

Matching is meant to be precise, because a wrong template answer is worse than none: a question matches an
example question only when every word outside the slots is the same (case and spacing aside), every slot's
text is a valid value of its column (a text column with known values: one of them, whatever its case), and
there is exactly one way to read it. Two templates, or two readings of one, that both fit: no match.

>>> t = Template("orders_in_region", "demo", "SELECT count(*) FROM orders WHERE region = $1",
...              (Parameter("region", "orders.region", "text", "North America"),),
...              ("How many orders come from {region}",))
>>> known = {"orders.region": ["North America", "Europe"]}
>>> match_question("how many orders come from  EUROPE", [t], known)
(Template(name='orders_in_region', ...), {'region': 'Europe'})
>>> match_question("how many orders come from Mars?", [t], known) is None
True
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

ParamType = Literal["text", "integer", "number", "boolean"]
PARAM_TYPES: tuple[ParamType, ...] = ("text", "integer", "number", "boolean")
NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
SLOT = re.compile(r"\{([a-z][a-z0-9_]{0,62})\}")
MAX_VALUE_CHARS = 200
SUGGESTIONS = 5
# Below this difflib ratio a known value is not "close" to the one given.
CLOSE = 0.4

_INTEGER_TYPES = {"smallint": (-2**15, 2**15 - 1), "integer": (-2**31, 2**31 - 1), "bigint": (-2**63, 2**63 - 1)}
_NUMBER_TYPES = ("numeric", "decimal", "real", "double precision")
_TEXT_TYPES = ("text", "character varying", "character", "citext", "varchar", "char", "name")
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_BOOL = {"true": "true", "yes": "true", "t": "true", "1": "true", "false": "false", "no": "false", "f": "false",
         "0": "false"}


class DefinitionError(ValueError):
    """What is wrong with a template's definition (the ``template_invalid`` problem says it)."""


class ValueOutOfDomain(ValueError):
    """A parameter value its column cannot hold, with the closest values it does hold."""

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = list(suggestions)


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    column: str  # "table.column" (the table as the schema names it: "schema.table" outside public)
    type: ParamType
    default: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "column": self.column, "type": self.type, "default": self.default}


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    database: str
    sql: str
    parameters: tuple[Parameter, ...]
    questions: tuple[str, ...]
    description: str = ""
    uses: int = field(default=0, compare=False)

    def __repr__(self) -> str:
        return f"Template(name={self.name!r}, ...)"

    @classmethod
    def of(cls, stored: Any) -> Template:
        """From a :class:`gateway.store.templates.StoredTemplate`."""
        return cls(stored.name, stored.database, stored.sql,
                   tuple(Parameter(p["name"], p["column"], p["type"], p.get("default")) for p in stored.parameters),
                   tuple(stored.questions), stored.description, stored.uses)

    def args(self, values: Mapping[str, str]) -> tuple[str, ...]:
        """The values in ``$k`` order, as text (the driver types them as Postgres infers each ``$k``)."""
        return tuple(values[p.name] for p in self.parameters)

    def question(self, values: Mapping[str, str]) -> str:
        """The first example question with ``values`` in its slots."""
        return SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), self.questions[0])


def param_type(column_type: str) -> ParamType | None:
    """The parameter type for a column's type; None for columns a parameter cannot be bound to.

    >>> param_type("character varying(40)"), param_type("bigint"), param_type("numeric(10,2)"), param_type("date")
    ('text', 'integer', 'number', None)
    """
    base = column_type.split("(", 1)[0].strip().lower()
    if base in _TEXT_TYPES:
        return "text"
    if base in _INTEGER_TYPES:
        return "integer"
    if base in _NUMBER_TYPES:
        return "number"
    if base == "boolean":
        return "boolean"
    return None


def check_value(parameter: Parameter, raw: str, column_type: str, known: Sequence[str] | None) -> str:
    """``raw`` as the column stores it, or :class:`ValueOutOfDomain` with the closest known values.

    A text column with known values (the low-cardinality values the value hints use, as the caller may
    read them) takes only those (any case: the stored spelling is returned); other text columns take any
    text up to ``MAX_VALUE_CHARS``; numbers must parse and fit the column's type.

    >>> p = Parameter("region", "orders.region", "text")
    >>> check_value(p, " europe ", "text", ["Europe", "Asia"])
    'Europe'
    >>> try:
    ...     check_value(p, "Eurpoe", "text", ["Europe", "Asia"])
    ... except ValueOutOfDomain as exc:
    ...     exc.suggestions
    ['Europe']
    """
    value = raw.strip()
    if "\x00" in value or len(value) > MAX_VALUE_CHARS:
        raise ValueOutOfDomain(f"{parameter.name}: at most {MAX_VALUE_CHARS} characters, no NUL")
    if parameter.type == "text":
        if not value:
            raise ValueOutOfDomain(f"{parameter.name}: a value is needed", list(known or [])[:SUGGESTIONS])
        if known:
            for stored in known:
                if stored.casefold() == value.casefold():
                    return stored
            raise ValueOutOfDomain(f"{parameter.name}: {value[:60]!r} is not a value of {parameter.column}",
                                   closest(value, known))
        return value
    if parameter.type == "integer":
        low, high = _INTEGER_TYPES.get(column_type.split("(", 1)[0].strip().lower(), _INTEGER_TYPES["bigint"])
        if not _INTEGER_TEXT.fullmatch(value):
            raise ValueOutOfDomain(f"{parameter.name}: {value[:60]!r} is not an integer")
        if not low <= int(value) <= high:
            raise ValueOutOfDomain(f"{parameter.name}: {value} is out of the range of {column_type} "
                                   f"({low} .. {high})")
        return str(int(value))
    if parameter.type == "number":
        if not _NUMBER_TEXT.fullmatch(value):
            raise ValueOutOfDomain(f"{parameter.name}: {value[:60]!r} is not a number")
        return value
    lowered = value.lower()
    if lowered not in _BOOL:
        raise ValueOutOfDomain(f"{parameter.name}: {value[:60]!r} is not true or false", ["true", "false"])
    return _BOOL[lowered]


def closest(value: str, known: Sequence[str]) -> list[str]:
    """The known values most like ``value`` (case aside), best first; the first few when none is close."""
    lowered = {v.casefold(): v for v in known}
    found = difflib.get_close_matches(value.casefold(), list(lowered), n=SUGGESTIONS, cutoff=CLOSE)
    return [lowered[f] for f in found] or list(known)[:SUGGESTIONS]


# --- the definition -------------------------------------------------------------------------------------------

def normalized(text: str) -> str:
    """Spacing collapsed and end punctuation off: how questions and example questions are compared.

    >>> normalized("  How many   orders?! ")
    'How many orders'
    """
    return " ".join(text.split()).rstrip("?!.;: ")


def slotted(question: str, parameters: Sequence[Parameter]) -> str:
    """An example question with ``{name}`` slots: as given, or with each parameter's default put back as its
    slot when the question spells it (``How many orders come from Europe?`` with default ``Europe``)."""
    if SLOT.search(question):
        return question
    out = question
    for p in sorted(parameters, key=lambda p: -len(p.default or "")):
        if p.default:
            out = re.sub(rf"(?<!\w){re.escape(p.default)}(?!\w)", "{" + p.name + "}", out, count=1,
                         flags=re.IGNORECASE)
    return out


def check_questions(questions: Sequence[str], parameters: Sequence[Parameter]) -> tuple[str, ...]:
    """The example questions with slots, or :class:`DefinitionError`: every question names every parameter
    once, slots are separated by words, and at least two words stand outside the slots."""
    if not questions:
        raise DefinitionError("a template needs at least one example question")
    names = sorted(p.name for p in parameters)
    out: list[str] = []
    for question in questions:
        text = normalized(slotted(question, parameters))
        slots = SLOT.findall(text)
        if sorted(slots) != names:
            raise DefinitionError(f"the question {question!r} must hold each parameter's slot exactly once "
                                  f"({', '.join('{' + n + '}' for n in names) or 'none'}); it has "
                                  f"{', '.join('{' + s + '}' for s in slots) or 'none'}")
        if re.search(r"\}\s*\{", text):
            raise DefinitionError(f"the question {question!r} has two slots with nothing between them")
        if len(SLOT.sub(" ", text).split()) < 2:
            raise DefinitionError(f"the question {question!r} needs at least two words outside its slots")
        out.append(text)
    return tuple(dict.fromkeys(out))


# --- matching ------------------------------------------------------------------------------------------------

SPLITS_EXPLORED = 2000  # partial readings tried per example question: past it, the question is too ambiguous


def _splits(asked: str, example: str) -> list[dict[str, str]]:
    """Every way ``asked`` reads as ``example`` (its words compared case-blind, each ``{slot}`` a value of
    at most ``MAX_VALUE_CHARS`` that starts and ends with a non-space), or [] when it reads none or more
    than :data:`SPLITS_EXPLORED` partial readings would be needed to tell.

    No regular expression backtracks here: the words between slots are found once each, and the readings
    are walked with a bound, so a question built to be ambiguous costs a bounded time, not exponential.

    >>> _splits("Orders in north america by month", "orders in {region} by {grain}")
    [{'region': 'north america', 'grain': 'month'}]
    >>> _splits("orders in a by b by c", "orders in {x} by {y}")
    [{'x': 'a', 'y': 'b by c'}, {'x': 'a by b', 'y': 'c'}]
    """
    names = SLOT.findall(example)
    literals = [part.lower() for part in SLOT.split(example)[::2]]  # len(names) + 1 pieces
    text = asked.lower()
    if len(text) != len(asked) or len(asked) > sum(map(len, literals)) + len(names) * (MAX_VALUE_CHARS + 2):
        return []  # a case change that moves offsets (rare Unicode), or longer than any valid reading
    head, tail = literals[0], literals[-1]
    if not names:
        return [{}] if text == head else []
    if not text.startswith(head) or not text.endswith(tail) or len(text) < len(head) + len(tail):
        return []
    end = len(text) - len(tail)
    # where each word between two slots occurs in the question, found once
    places = [[i for i in range(len(head), end) if text.startswith(sep, i)] for sep in literals[1:-1]]
    found: list[dict[str, str]] = []
    explored = 0

    def value_ok(start: int, stop: int) -> bool:
        return 0 < stop - start <= MAX_VALUE_CHARS and not asked[start].isspace() and not asked[stop - 1].isspace()

    def walk(k: int, start: int, values: list[str]) -> bool:
        nonlocal explored
        explored += 1
        if explored > SPLITS_EXPLORED:
            return False
        if k == len(names) - 1:  # the last slot runs to the tail
            if value_ok(start, end):
                found.append(dict(zip(names, [*values, asked[start:end]], strict=True)))
            return True
        for i in places[k]:
            if i < start:
                continue
            if i - start > MAX_VALUE_CHARS:
                break
            if value_ok(start, i) and not walk(k + 1, i + len(literals[k + 1]), [*values, asked[start:i]]):
                return False
        return True

    return found if walk(0, len(head), []) else []


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].strip()
    return value


Columns = Mapping[str, str]  # "table.column" -> its type, as the caller may read them


def readings(question: str, template: Template, known: Mapping[str, Sequence[str]],
             columns: Columns | None = None) -> set[tuple[tuple[str, str], ...]]:
    """Every valid way ``template`` reads ``question``: the parameter values (stored spelling), sorted by name."""
    asked = normalized(question)
    found: set[tuple[tuple[str, str], ...]] = set()
    for example in template.questions:
        for split in _splits(asked, example):
            values: dict[str, str] = {}
            try:
                for p in template.parameters:
                    column_type = (columns or {}).get(p.column, p.type)
                    values[p.name] = check_value(p, _unquoted(split[p.name]), column_type, known.get(p.column))
            except ValueOutOfDomain:
                continue
            found.add(tuple(sorted(values.items())))
    return found


def match_question(question: str, templates: Sequence[Template], known: Mapping[str, Sequence[str]],
                   columns: Columns | None = None, usable: Callable[[Template], bool] | None = None,
                   ) -> tuple[Template, dict[str, str]] | None:
    """The one template and values that answer ``question``; None when none does, or more than one could.
    ``usable``: whether the caller may use a template (asked only of templates that read the question)."""
    hits = [(t, reading) for t in templates for reading in readings(question, t, known, columns)]
    if usable is not None:
        hits = [(t, reading) for t, reading in hits if usable(t)]
    if len(hits) != 1:
        return None
    template, reading = hits[0]
    return template, dict(reading)
