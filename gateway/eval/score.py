"""Execution accuracy: run the gold SQL, compare a prediction's result with it.

Gold SQL runs through the same guarded execution as everything else (read-only transaction, timeouts, row
cap) but skips the safety check: it is the evaluator's SQL, and a gold that needs a function the policy
blocks is worth seeing in the report as an unanswerable question, not hiding. A gold whose result hits the
row cap cannot be compared (the prediction's would be cut at the same place, or not); such a question is
reported as a gold error, with the setting to raise.

A prediction is scored under three conventions, so that numbers compare with published ones:

* ``strict``, the project's own (:func:`gateway.sql.equivalence.same_result`): rows a multiset, order when the
  gold has ORDER BY (modulo ties: rows the gold's sort key does not tell apart may come in any order, when
  the key is among the gold's outputs), column order free, no extra columns (``extra`` is the same with
  extra columns allowed);
* ``defog``, defog sql-eval's: duplicates dropped, order only when the question asks for it (and the gold
  orders), extra columns allowed (the gold's columns a subset of the prediction's);
* ``bird``, BIRD's: the rows as a set of tuples, columns in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway import errors
from gateway.eval.questions import Question
from gateway.service import Gateway
from gateway.sql.equivalence import (
    asks_for_order,
    gold_is_ordered,
    order_key_columns,
    same_result,
    same_result_bird,
    same_result_defog,
)

__all__ = ["Gold", "GoldResult", "Verdict", "run_gold", "score"]


@dataclass(frozen=True, slots=True)
class GoldResult:
    sql: str
    columns: list[str]
    rows: list[list[Any]]
    ordered: bool
    order_key: list[int] | None = None  # the outputs the gold sorts on: order is compared modulo their ties


@dataclass(slots=True)
class Gold:
    """The results of a question's gold alternatives, or why they cannot be used."""

    alternatives: list[GoldResult] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    strict: bool  # same columns (in some order) and rows
    extra: bool   # the same, allowing extra columns in the prediction
    defog: bool = False  # defog sql-eval's convention
    bird: bool = False   # BIRD's convention

    def as_dict(self) -> dict[str, bool]:
        return {"strict": self.strict, "extra": self.extra, "defog": self.defog, "bird": self.bird}


WRONG = Verdict(strict=False, extra=False)


async def run_gold(gateway: Gateway, question: Question) -> Gold:
    """Execute every gold alternative of ``question`` on its database."""
    gold = Gold()
    for sql in question.gold_sql:
        try:
            result = await gateway.reference_query(question.database, sql)
        except errors.UnknownDatabase as exc:
            return Gold(error=f"{exc.code}: {exc.detail}")
        except errors.DatabaseUnavailable:
            raise  # infrastructure, not the question's fault: the run stops and can be resumed
        except errors.GatewayError as exc:
            return Gold(error=f"gold SQL failed ({exc.code}): {exc.detail}")
        if result.truncated:
            cap = gateway.settings.databases[question.database].limits.max_rows
            return Gold(error=f"gold result has more than {cap} rows; raise "
                              f"databases.{question.database}.limits.max_rows to evaluate this question")
        gold.alternatives.append(GoldResult(sql, [c.name for c in result.columns], result.rows, gold_is_ordered(sql),
                                             order_key_columns(sql)))
    return gold


def score(gold: Gold, columns: Sequence[Any] | None, rows: Sequence[Sequence[Any]] | None, *,
          question: str = "") -> Verdict:
    """Compare one prediction (None when it produced no result) with every gold alternative; ``question``
    is read by the defog convention (does it ask for an order?)."""
    if gold.error is not None or columns is None or rows is None:
        return WRONG
    strict = extra = defog = bird = False
    ordering_asked = asks_for_order(question)
    for alt in gold.alternatives:
        strict = strict or same_result(alt.columns, alt.rows, columns, rows, ordered=alt.ordered,
                                       order_key=alt.order_key)
        extra = extra or strict or same_result(alt.columns, alt.rows, columns, rows, ordered=alt.ordered,
                                               order_key=alt.order_key,
                                               allow_extra_columns=True)
        defog = defog or same_result_defog(alt.columns, alt.rows, columns, rows,
                                           ordered=alt.ordered and ordering_asked, order_key=alt.order_key)
        bird = bird or same_result_bird(alt.rows, rows)
    return Verdict(strict=strict, extra=extra, defog=defog, bird=bird)
