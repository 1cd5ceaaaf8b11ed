"""Validation: turn one attempt's outcome into findings with stable codes.

Codes: ``exec_error`` (with SQLSTATE), ``blocked`` (with the safety codes), ``no_sql``, ``empty_result``,
``null_heavy``, ``count_mismatch``, ``grouping_mismatch``, ``duplicate_rows``, ``truncated``,
``rule_violation`` (from the database's rules), ``llm_judge`` and ``repeated_sql``. The result checks are a
chain of small functions run in order (:data:`RESULT_CHECKS`); adding a check is adding a function and a
line. Every code is registered in :data:`gateway.findings.CODES`; which codes trigger a reflection is
per-database policy (:func:`triggers`).

>>> shape_of("How many orders were cancelled?")
Shape(count=True, grouped=False)
>>> shape_of("Revenue per region in 2024")
Shape(count=False, grouped=True)
>>> shape_of("Revenue by month"), shape_of("How many orders were placed by customers in Germany?")
(Shape(count=False, grouped=True), Shape(count=True, grouped=False))
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.settings import AskPolicy

if TYPE_CHECKING:
    from gateway.execute import QueryResult
    from gateway.rules import RuleSet

from gateway.findings import ALWAYS_REFLECT, Finding
from gateway.rules import rule_findings

NULL_HEAVY_SHARE = 0.5  # more than this share of NULL cells (or any all-NULL column) is suspicious


@dataclass(frozen=True, slots=True)
class Shape:
    """What the wording of a question implies about the shape of its answer."""

    count: bool
    grouped: bool


# Natural-language cues (the question is prose, not SQL, so word matching is the right tool here).
_COUNT_CUE = re.compile(r"\b(how many|number of|count of)\b", re.IGNORECASE)
_GROUP_CUE = re.compile(r"\b(per|each|every|broken down|breakdown|split)\b", re.IGNORECASE)
_BY = re.compile(r"(\w+)\s+by\s+(\w+)", re.IGNORECASE)
# "placed by", "sorted by", "by far": agents, orderings and idioms, not groupings
_NOT_GROUPING_BEFORE_BY = frozenset({"sort", "order", "rank", "made", "sold", "paid", "run", "held", "led",
                                     "won", "bought", "built", "set", "done", "taken", "owned", "written"})
_NOT_GROUPING_AFTER_BY = frozenset({"far", "the", "a", "an", "whom", "which", "default", "itself"})


def _groups_by(question: str) -> bool:
    for before, after in _BY.findall(question):
        before, after = before.lower(), after.lower()
        if before in {"grouped", "broken", "split", "segmented", "aggregated", "down"}:
            return True
        if before.endswith("ed") or before in _NOT_GROUPING_BEFORE_BY or after in _NOT_GROUPING_AFTER_BY:
            continue
        return True
    return False


def shape_of(question: str) -> Shape:
    grouped = bool(_GROUP_CUE.search(question)) or _groups_by(question)
    return Shape(count=bool(_COUNT_CUE.search(question)), grouped=grouped)


@dataclass(frozen=True, slots=True)
class ResultView:
    """What the result checks look at: the question and the (capped) result of the attempt."""

    question: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    truncated: bool


def empty_result(view: ResultView) -> Iterable[Finding]:
    if not view.rows:
        yield Finding("empty_result", "The query returned no rows.")


def null_heavy(view: ResultView) -> Iterable[Finding]:
    if not view.rows or not view.columns:
        return
    width = len(view.columns)
    all_null = [view.columns[i] for i in range(width) if all(row[i] is None for row in view.rows)]
    cells = len(view.rows) * width
    nulls = sum(1 for row in view.rows for value in row if value is None)
    if all_null or nulls / cells > NULL_HEAVY_SHARE:
        what = f"columns entirely NULL: {', '.join(all_null)}" if all_null else f"{nulls} of {cells} values are NULL"
        yield Finding("null_heavy", f"The result is mostly empty ({what}).",
                      detail={"null_columns": all_null, "null_share": round(nulls / cells, 3)})


def count_mismatch(view: ResultView) -> Iterable[Finding]:
    shape = shape_of(view.question)
    if shape.count and not shape.grouped and len(view.rows) > 1:
        yield Finding("count_mismatch", f"The question asks how many, but the query returned {len(view.rows)} "
                      f"rows{' or more' if view.truncated else ''} instead of one count.",
                      detail={"rows": len(view.rows)})


def grouping_mismatch(view: ResultView) -> Iterable[Finding]:
    if shape_of(view.question).grouped and len(view.rows) == 1:
        yield Finding("grouping_mismatch", "The question asks for values per group, but the query returned a "
                      "single row.")


def duplicate_rows(view: ResultView) -> Iterable[Finding]:
    if len(view.rows) < 2:
        return
    seen: set[str] = set()
    duplicates = 0
    for row in view.rows:
        key = json.dumps(row, default=str, sort_keys=True)  # rows may hold lists and dicts (json, arrays)
        if key in seen:
            duplicates += 1
        seen.add(key)
    if duplicates:
        yield Finding("duplicate_rows", f"{duplicates} row(s) repeat an earlier row exactly.",
                      detail={"duplicates": duplicates})


def truncated(view: ResultView) -> Iterable[Finding]:
    if view.truncated:
        yield Finding("truncated", f"The result was cut at {len(view.rows)} rows (the row limit).",
                      detail={"rows": len(view.rows)})


RESULT_CHECKS: tuple[Callable[[ResultView], Iterable[Finding]], ...] = (
    empty_result,
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
    view = ResultView(question, [c.name for c in result.columns], result.rows, result.truncated)
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
