"""The cost gate: ask the planner what a statement will cost before running it.

Static rules see constants; only the planner knows table sizes. Inside the query's own READ ONLY
transaction (same role, same settings) the gateway runs ``EXPLAIN (FORMAT JSON)`` - never ANALYZE, so
nothing executes - and refuses with ``cost_too_high`` when the plan's total cost is above
``limits.max_plan_cost`` or any node expects more rows than ``limits.max_plan_rows`` (a join that
multiplies two tables shows there even under an aggregate that returns one row).

The text planned is the checked text, prefixed by ``EXPLAIN (FORMAT JSON)``. The one statement the safety
check allows that EXPLAIN cannot take is an EXPLAIN itself, which runs nothing: Postgres answers it with a
syntax error, the transaction goes back to the savepoint taken when it began, and the statement runs
ungated. Estimates of recent statements are reused for a minute (per database, role and text), so a
dashboard's repeated queries pay for the EXPLAIN once; the limits are compared on every run.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from gateway import errors
from gateway.observability import metrics

SAVEPOINT = "SAVEPOINT nl2sql_cost_gate"


@dataclass(frozen=True, slots=True)
class Estimate:
    """What the planner expects: total cost of the plan and the most rows any of its nodes produces."""

    cost: float
    rows: float


async def estimate(conn: asyncpg.Connection, sql: str, args: Sequence[Any] = ()) -> Estimate | None:
    """The planner's estimate for ``sql`` (with its parameters' values, so the plan is the one that runs);
    None when the statement is not plannable (an EXPLAIN)."""
    try:
        raw = await conn.fetchval("EXPLAIN (FORMAT JSON)\n" + sql, *args)
    except asyncpg.PostgresSyntaxError:
        await conn.execute("ROLLBACK TO " + SAVEPOINT)
        return None
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    return Estimate(float(plan["Total Cost"]), _most_rows(plan))


class _Recent:
    """Estimates of recent statements: dashboards send the same text again and again, and a plan's
    estimate moves only with the table statistics. Keyed by database, role and text; kept ``TTL_S``."""

    TTL_S = 60.0
    MAX_ENTRIES = 2048

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, str | None, str], tuple[float, Estimate | None]] = OrderedDict()

    def get(self, key: tuple[str, str | None, str]) -> tuple[bool, Estimate | None]:
        hit = self._entries.get(key)
        if hit is None or time.monotonic() - hit[0] > self.TTL_S:
            return False, None
        self._entries.move_to_end(key)
        return True, hit[1]

    def put(self, key: tuple[str, str | None, str], value: Estimate | None) -> None:
        self._entries[key] = (time.monotonic(), value)
        if len(self._entries) > self.MAX_ENTRIES:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


recent = _Recent()


async def gate(conn: asyncpg.Connection, database: str, limits: Any, sql: str,
               role: str | None = None, args: Sequence[Any] = (), *, reveal: bool = True) -> Estimate | None:
    """Raise :class:`errors.CostTooHigh` when the plan is beyond the database's limits.

    ``reveal=False`` (a caller under a row policy): the problem names the limit passed, not the estimates.
    The planner's statistics cover every tenant's rows, so an estimated row count would tell one tenant how
    many rows hold another's value."""
    key = (database, role, sql)
    known, found = recent.get(key) if len(sql) <= 16_384 else (False, None)
    if not known:
        found = await estimate(conn, sql, args)
        recent.put(key, found)
    if found is None:
        return None
    over = []
    if found.cost > limits.max_plan_cost:
        over.append(f"cost {found.cost:,.0f} > max_plan_cost {limits.max_plan_cost:,.0f}")
    if found.rows > limits.max_plan_rows:
        over.append(f"{found.rows:,.0f} rows in one plan node > max_plan_rows {limits.max_plan_rows:,.0f}")
    if over and not reveal:
        metrics.DB_ERRORS.labels(database, errors.CostTooHigh.code).inc()
        passed = " and ".join(name for name, hit in (("max_plan_cost", found.cost > limits.max_plan_cost),
                                                      ("max_plan_rows", found.rows > limits.max_plan_rows)) if hit)
        raise errors.CostTooHigh(
            f"the planner estimates the query beyond {passed}; narrow the query (join condition, filters) or "
            f"raise databases.{database}.limits.max_plan_cost / max_plan_rows",
            max_plan_cost=limits.max_plan_cost, max_plan_rows=limits.max_plan_rows, database=database)
    if over:
        metrics.DB_ERRORS.labels(database, errors.CostTooHigh.code).inc()
        raise errors.CostTooHigh(
            f"the planner estimates {'; '.join(over)}; narrow the query (join condition, filters) or raise "
            f"databases.{database}.limits.max_plan_cost / max_plan_rows",
            estimated_cost=found.cost, estimated_rows=found.rows, max_plan_cost=limits.max_plan_cost,
            max_plan_rows=limits.max_plan_rows, database=database,
        )
    return found


def _most_rows(plan: dict[str, Any]) -> float:
    most, stack = 0.0, [plan]
    while stack:
        node = stack.pop()
        most = max(most, float(node.get("Plan Rows", 0)))
        stack.extend(node.get("Plans", ()))
    return most
