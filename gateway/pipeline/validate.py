"""Validation: turn one attempt's outcome into findings with stable codes.

Codes: ``exec_error`` (with SQLSTATE), ``blocked`` (with the safety codes), ``no_sql``, ``empty_result``,
``empty_aggregate`` (a filtered aggregate that came back 0 or NULL), ``null_heavy``, ``count_mismatch``,
``grouping_mismatch``, ``duplicate_rows``, ``truncated``,
``rule_violation`` (from the database's rules), ``llm_judge`` and ``repeated_sql``. The result checks are a
chain of small functions run in order (:data:`RESULT_CHECKS`); adding a check is adding a function and a
line. Every code is registered in :data:`gateway.findings.CODES`; which codes trigger a reflection is
per-database policy (:func:`triggers`). ``grouping_mismatch`` reads the question's wording ("orders by
customers who ..." names an agent, not a grouping), so it is a guess, not something the SQL and result show:
it is advisory (shown, the answer stays ``ok``) unless the policy lists it, and a reflection it triggers is
told to judge from the question. ``count_mismatch`` fires only on SQL that counts nothing.

Each check is built to stay silent on right answers (``eval`` measures how often each code fires on right
and on wrong answers): the wording of the question says what shape the answer should have, and the SQL's
structure (:mod:`gateway.pipeline.sqlshape`) says whether a shape the result has is a symptom or simply
what the data holds.

>>> shape_of("How many orders were cancelled?")
Shape(count=True, grouped=False)
>>> shape_of("Revenue per region in 2024")
Shape(count=False, grouped=True)
>>> shape_of("Revenue by month"), shape_of("How many orders were placed by customers in Germany?")
(Shape(count=False, grouped=True), Shape(count=True, grouped=False))
>>> shape_of("List the top 3 publications with the highest number of citations")
Shape(count=False, grouped=False)
>>> shape_of("What is the average number of items per order?")
Shape(count=False, grouped=False)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.pipeline.sqlshape import SqlShape, shape_of_sql
from gateway.settings import AskPolicy

if TYPE_CHECKING:
    from gateway.execute import QueryResult
    from gateway.rules import RuleSet

from gateway.findings import ALWAYS_REFLECT, Finding
from gateway.rules import rule_findings


@dataclass(frozen=True, slots=True)
class Shape:
    """What the wording of a question implies about the shape of its answer."""

    count: bool
    grouped: bool


# Natural-language cues (the question is prose, not SQL, so word matching is the right tool here).
_HOW_MANY = re.compile(r"\bhow many\b", re.IGNORECASE)
_NUMBER_OF = re.compile(r"((?:\w+\s+){0,2})(?:number|count) of\b", re.IGNORECASE)
# "the highest number of citations", "ranked by number of", "the average number of": a sort key or a
# statistic, not a request to count
_NOT_COUNTING_BEFORE = frozenset({"highest", "lowest", "most", "least", "fewest", "largest", "smallest", "greatest",
                                  "biggest", "maximum", "minimum", "max", "min", "top", "by", "average", "avg",
                                  "mean", "median", "higher", "lower", "larger", "smaller", "greater", "more",
                                  "less", "same", "ratio", "percentage", "share"})
# A question led by one of these asks for a list; "how many" later in it is a column of that list.
_LIST_LEAD = frozenset({"list", "show", "which", "who", "name", "display", "give"})
_GROUP_CUE = re.compile(r"\b(per|each|every|broken down|breakdown|split)\b", re.IGNORECASE)
# "the average number of items per order", "per capita": a rate, not one value per group
_RATE = re.compile(r"\b(?:average|avg|mean)\s+(?:\w+\s+)?(?:number|count|amount|quantity) of\b[^?.,;]*?\bper\b"
                   r"|\bper (?:capita|cent|head)\b", re.IGNORECASE)
_BY = re.compile(r"(\w+)\s+by\s+(\w+)", re.IGNORECASE)
# "placed by", "sorted by", "by far": agents, orderings and idioms, not groupings
_NOT_GROUPING_BEFORE_BY = frozenset({"sort", "order", "rank", "made", "sold", "paid", "run", "held", "led",
                                     "won", "bought", "built", "set", "done", "taken", "owned", "written"})
_NOT_GROUPING_AFTER_BY = frozenset({"far", "the", "a", "an", "whom", "which", "default", "itself", "number"})
# The question asks for each value once.
_DISTINCT_CUE = re.compile(r"\b(distinct|different|unique|without duplicates|no duplicates)\b", re.IGNORECASE)


def _groups_by(question: str) -> bool:
    for before, after in _BY.findall(question):
        before, after = before.lower(), after.lower()
        if before in {"grouped", "broken", "split", "segmented", "aggregated", "down"}:
            return True
        if before.endswith("ed") or before in _NOT_GROUPING_BEFORE_BY or after in _NOT_GROUPING_AFTER_BY:
            continue
        return True
    return False


def _counts(question: str) -> bool:
    """The question's main ask is a number of things ("how many", "the number of"), not a ranking by one."""
    words = question.split()
    lead = words[0].lower().strip(",:") if words else ""
    if _HOW_MANY.search(question):
        return lead not in _LIST_LEAD or bool(_HOW_MANY.match(" ".join(words[1:3])))
    for match in _NUMBER_OF.finditer(question):
        before = {w.lower() for w in match.group(1).split()} - {"the"}
        if not before & _NOT_COUNTING_BEFORE and lead not in _LIST_LEAD:
            return True
    return False


def _groups(question: str) -> bool:
    cue = _GROUP_CUE.search(_RATE.sub(" ", question))
    return bool(cue) or _groups_by(question)


def shape_of(question: str) -> Shape:
    return Shape(count=_counts(question), grouped=_groups(question))


@dataclass(frozen=True, slots=True)
class ResultView:
    """What the result checks look at: the question, the (capped) result of the attempt and what the SQL's
    structure says about it (``shape``: None when unknown, and the checks that need it stay silent)."""

    question: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    truncated: bool
    shape: SqlShape | None = None


def empty_result(view: ResultView) -> Iterable[Finding]:
    if not view.rows:
        yield Finding("empty_result", "The query returned no rows.")


def empty_aggregate(view: ResultView) -> Iterable[Finding]:
    """A filtered aggregate without GROUP BY whose every aggregate is 0 or NULL: the filter most likely
    matched nothing (a misspelt literal, a wrong date range), and a count of 0 looks like an answer."""
    shape = view.shape
    if shape is None or not shape.collapses or not shape.filtered or shape.aggregate_columns is None \
            or len(view.rows) != 1:
        return
    row = view.rows[0]
    values = [row[i] for i, is_agg in enumerate(shape.aggregate_columns) if is_agg and i < len(row)]
    if values and all(_zero_or_null(v) for v in values):
        yield Finding("empty_aggregate", "The query aggregates over a filter, and every aggregate came back 0 or "
                      "NULL: the filter probably matched no rows.", detail={"values": values})


def _zero_or_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    try:
        return float(value) == 0.0  # numeric arrives as an exact decimal string
    except (TypeError, ValueError):
        return False


def null_heavy(view: ResultView) -> Iterable[Finding]:
    """A result column entirely NULL that reads only tables on the nullable side of an outer join: the join
    matched nothing (wrong key). NULLs the data itself holds (a column that is mostly empty, an optional
    attribute) are answers, not symptoms, and aggregates over nothing are :func:`empty_aggregate`'s."""
    shape = view.shape
    if not view.rows or not view.columns or shape is None or shape.outer_nullable is None:
        return
    width = min(len(view.columns), len(shape.outer_nullable))
    all_null = [view.columns[i] for i in range(width)
                if shape.outer_nullable[i] and all(row[i] is None for row in view.rows)]
    if all_null:
        yield Finding("null_heavy", f"Columns from the optional side of an outer join are entirely NULL: "
                      f"{', '.join(all_null)}; the join matched no rows.", detail={"null_columns": all_null})


def count_mismatch(view: ResultView) -> Iterable[Finding]:
    """Many rows for a "how many" question from SQL that counts nothing: rows listed instead of counted. SQL
    that aggregates (a ranking with its counts, two counts side by side, a ratio of counts) answers with what
    it counted, however the question reads, so the check stays silent on it."""
    sql = view.shape
    if sql is None or sql.groups or sql.collapses or any(sql.aggregate_columns or ()) or len(view.rows) < 2:
        return
    shape = shape_of(view.question)
    if shape.count and not shape.grouped:
        yield Finding("count_mismatch", f"The question asks how many, but the query returned {len(view.rows)} "
                      f"rows{' or more' if view.truncated else ''} instead of one count.",
                      detail={"rows": len(view.rows)})


def grouping_mismatch(view: ResultView) -> Iterable[Finding]:
    """One row for a per-group question, because the SQL aggregates everything without GROUP BY. When the
    SQL does group and the result still holds one row, the data holds one group (the engine counted them)."""
    if len(view.rows) == 1 and view.shape is not None and view.shape.collapses and shape_of(view.question).grouped:
        yield Finding("grouping_mismatch", "The question asks for values per group, but the query aggregates "
                      "every row into one (no GROUP BY).")


def duplicate_rows(view: ResultView) -> Iterable[Finding]:
    """Repeated rows when the question asks for each value once (distinct, different, unique). A projection
    may repeat values the data holds; that is the answer unless distinct values were asked for."""
    if len(view.rows) < 2 or not _DISTINCT_CUE.search(view.question) or (view.shape and view.shape.dedupes):
        return
    seen: set[str] = set()
    duplicates = 0
    for row in view.rows:
        key = json.dumps(row, default=str, sort_keys=True)  # rows may hold lists and dicts (json, arrays)
        if key in seen:
            duplicates += 1
        seen.add(key)
    if duplicates:
        yield Finding("duplicate_rows", f"{duplicates} row(s) repeat an earlier row exactly, but the question "
                      "asks for distinct values.", detail={"duplicates": duplicates})


def truncated(view: ResultView) -> Iterable[Finding]:
    if view.truncated:
        yield Finding("truncated", f"The result was cut at {len(view.rows)} rows (the row limit).",
                      detail={"rows": len(view.rows)})


RESULT_CHECKS: tuple[Callable[[ResultView], Iterable[Finding]], ...] = (
    empty_result,
    empty_aggregate,
    null_heavy,
    count_mismatch,
    grouping_mismatch,
    duplicate_rows,
    truncated,
)


def check_result(view: ResultView) -> list[Finding]:
    """Run every result check in order."""
    return [finding for check in RESULT_CHECKS for finding in check(view)]


def validate(question: str, sql: str, result: QueryResult, ruleset: RuleSet) -> list[Finding]:
    """Every finding about one executed attempt: the result checks, then the database's rules."""
    view = ResultView(question, [c.name for c in result.columns], result.rows, result.truncated, shape_of_sql(sql))
    findings = check_result(view)
    return findings + rule_findings(ruleset, sql, result.columns, result.rows)


def exec_error(code: str, detail: str, extra: dict[str, Any]) -> Finding:
    """A database error (problem code, detail and the SQLSTATE, message, position, hint fields)."""
    fields = {k: extra.get(k) for k in ("sqlstate", "position", "hint") if extra.get(k) is not None}
    message = str(extra.get("message") or detail)
    return Finding("exec_error", message, detail={"error": code, **fields})


def blocked(codes: Sequence[str], messages: Sequence[str]) -> Finding:
    return Finding("blocked", "; ".join(messages) or "blocked by the safety check", detail={"codes": list(codes)})


def triggers(findings: Iterable[Finding], policy: AskPolicy) -> list[str]:
    """The finding codes, in order and without repeats, that call for a reflection under ``policy``."""
    wanted = ALWAYS_REFLECT | policy.reflect_on
    return list(dict.fromkeys(f.code for f in findings if f.code in wanted))
