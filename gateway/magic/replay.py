"""Regression replay: the verified set asked under two configurations, and what was right before and is wrong now.

A *variant* is a configuration of the gateway for one database, applied as a view of the running state
that shares every resource (pools, LLM client, caches) and differs in one thing: the guideline (a candidate
version), the rules, or the model and ask policy (see :func:`guideline_variant`, :func:`settings_variant`).
Each verified question is asked through the real pipeline (:func:`gateway.pipeline.ask`) once under the
*before* variant (what is in force) and once under the *after* one (the change), its reference SQL is run,
and each answer is compared with the reference by :func:`gateway.sql.equivalence.same_result` (order modulo
the reference's ties). Per item the report says:

* ``regressed``: right before, wrong now, with the reason (:mod:`gateway.eval.reasons`), both SQLs;
* ``fixed``, ``kept`` (right both times), ``still_wrong``;
* ``suspect``: the reference itself is doubtful (:mod:`gateway.eval.suspect`): shown, not counted.

and the cost of each side (LLM calls, tokens, latency). The replays write no audit rows and no
corrections, leave the answer-ratio gauges alone, and hide the question being replayed from the few-shot
examples and exact answers, or it would answer itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway import errors
from gateway.context.model import Example, Guideline
from gateway.context.sources import ExamplesSource, GuidelineSource
from gateway.eval.reasons import why_wrong
from gateway.eval.stats import percentile
from gateway.eval.suspect import limit_of, policy_refuses, suspect_reason, widened
from gateway.execute import run_query
from gateway.learning.corrections import MemoryCorrections
from gateway.magic.verified import VerifiedItem
from gateway.pipeline import Question, ask
from gateway.pipeline.tally import Tally
from gateway.rules import RulesRegistry
from gateway.settings import DatabaseSettings
from gateway.sql.equivalence import gold_is_ordered, normalize_cell, order_key_columns
from gateway.state import GatewayState
from gateway.store.examples import question_key

__all__ = ["IN_FORCE", "Reference", "RegressionReport", "Variant", "WithoutQuestion", "combine", "guideline_variant",
           "render_report", "replay", "rules_variant", "settings_variant"]

View = Callable[[GatewayState, str], GatewayState]


@dataclass(frozen=True, slots=True)
class Variant:
    """A configuration to replay under: ``label`` for the report, ``view`` the state as configured."""

    label: str
    view: View


class _Fixed:
    def __init__(self, guideline: Guideline) -> None:
        self.guideline = guideline

    async def active(self, database: str) -> Guideline:
        return self.guideline


class _PerDatabase:
    """The guideline ``source`` answers for each database, pinned (the baseline of a replay)."""

    def __init__(self, source: GuidelineSource) -> None:
        self.source = source

    async def active(self, database: str) -> Guideline:
        return await self.source.active(database)


def guideline_variant(label: str, guideline: Guideline | GuidelineSource) -> Variant:
    """Questions use ``guideline`` (a text, or a source such as what is in force now)."""
    source = _Fixed(guideline) if isinstance(guideline, Guideline) else _PerDatabase(guideline)
    return Variant(label, lambda state, database: replace(state, guidelines=source))


def settings_variant(label: str, change: Callable[[DatabaseSettings], DatabaseSettings]) -> Variant:
    """The database's settings changed by ``change`` (its model, ask policy, limits)."""
    def view(state: GatewayState, database: str) -> GatewayState:
        target = state.target(database)
        targets = replace(state.targets, by_name={**state.targets.by_name,
                                                  database: replace(target, settings=change(target.settings))})
        return replace(state, targets=targets)
    return Variant(label, view)


def rules_variant(label: str, rules_dir: Path) -> Variant:
    """The DBA rules read from ``rules_dir`` instead of the configured folder (a rules change under review)."""
    registry: dict[str, RulesRegistry] = {}

    def view(state: GatewayState, database: str) -> GatewayState:
        if "rules" not in registry:  # one registry for the whole replay, built on first use
            modes = {n: t.settings.rules for n, t in state.targets.by_name.items()}
            registry["rules"] = RulesRegistry(rules_dir, modes=modes)
        return replace(state, rules=registry["rules"])
    return Variant(label, view)


def combine(label: str, variants: Sequence[Variant]) -> Variant:
    """Several changes at once, applied in order."""
    def view(state: GatewayState, database: str) -> GatewayState:
        for variant in variants:
            state = variant.view(state, database)
        return state
    return Variant(label, view)


IN_FORCE = Variant("in force", lambda state, database: state)


class WithoutQuestion:
    """The examples source minus the question being replayed (and no exact answers: the LLM must answer)."""

    def __init__(self, inner: ExamplesSource, question: str) -> None:
        self.inner, self.key = inner, question_key(question)

    async def similar(self, database: str, question: str, k: int) -> list[Example]:
        found = await self.inner.similar(database, question, k + 1)
        return [e for e in found if question_key(e.question) != self.key][:k]

    async def exact(self, database: str, question: str) -> Example | None:
        return None


@dataclass(slots=True)
class Reference:
    """The reference SQL's result now, or why it cannot be used (``suspect``)."""

    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] | None = None
    ordered: bool = False
    order_key: list[int] | None = None
    suspect: str | None = None
    error: str | None = None


async def run_reference(state: GatewayState, item: VerifiedItem) -> Reference:
    """Run the reference SQL (unchecked beyond the policy, like the eval's gold), and say whether it is suspect.

    A reference the current policy refuses is not run at all: it is suspect, and what it would read (a column
    hidden since it was approved, say) stays unread."""
    target = state.target(item.database)
    cap = target.settings.limits.max_rows
    ref = Reference(ordered=gold_is_ordered(item.sql), order_key=order_key_columns(item.sql))
    if policy_refuses(state.policy(item.database), item.sql):
        ref.suspect = "reference_blocked"
        return ref
    tie = False
    try:
        result = await run_query(target, item.sql, max_rows=cap)
        if result.truncated:
            ref.error = f"the reference has more than {cap} rows (limits.max_rows)"
        else:
            ref.columns, ref.rows = [c.name for c in result.columns], result.rows
            limit = limit_of(item.sql)
            if limit is not None and ref.order_key and len(result.rows) == limit and 0 < limit < cap:
                wide = await run_query(target, widened(item.sql, limit) or item.sql, max_rows=cap)
                if len(wide.rows) > limit:
                    tie = _key(wide.rows[limit - 1], ref.order_key) == _key(wide.rows[limit], ref.order_key)
    except errors.DatabaseUnavailable:
        raise
    except errors.GatewayError as exc:
        ref.error = f"{exc.code}: {exc.detail}"
    ref.suspect = suspect_reason(blocked=False, failed=ref.error, rows=ref.rows, sql=item.sql,
                                 tie_across_limit=tie)
    return ref


def _key(row: Sequence[Any], columns: Sequence[int]) -> tuple[Any, ...]:
    return tuple(normalize_cell(row[i]) for i in columns)


async def answer_under(state: GatewayState, variant: Variant, item: VerifiedItem,
                       ref: Reference, tally: Tally) -> dict[str, Any]:
    """Ask ``item``'s question under ``variant``: status, SQL, whether right, why not, and its cost."""
    view = replace(variant.view(state, item.database), tally=tally,
                   examples=WithoutQuestion(state.examples, item.question), corrections=MemoryCorrections(size=1))
    limits = view.target(item.database).settings.limits
    started = time.perf_counter()
    columns: list[str] | None = None
    rows: list[list[Any]] | None = None
    try:
        answer = await ask(view, Question(item.database, item.question, max_rows=limits.max_rows))
    except errors.GatewayError as exc:
        if exc.status in (429, 503):
            raise  # infrastructure, not the configuration's outcome
        trace = exc.extra.get("attempts") or []
        out: dict[str, Any] = {"status": "error", "sql": None, "error": f"{exc.code}: {exc.detail}",
                               "llm_calls": len(trace),
                               "prompt_tokens": sum(a.get("tokens", {}).get("prompt", 0) for a in trace),
                               "completion_tokens": sum(a.get("tokens", {}).get("completion", 0) for a in trace)}
    else:
        chosen = answer.chosen
        error = None
        if answer.status in ("ok", "suspicious") and chosen is not None and chosen.result is not None:
            columns, rows = [c.name for c in chosen.result.columns], chosen.result.rows
        else:
            codes = ", ".join(chosen.codes) if chosen is not None else ""
            error = f"{answer.status}: {codes or answer.stop_reason}"
        out = {"status": answer.status, "sql": chosen.sql if chosen else None, "error": error,
               "llm_calls": len(answer.attempts),
               "prompt_tokens": sum(a.tokens.get("prompt", 0) for a in answer.attempts),
               "completion_tokens": sum(a.tokens.get("completion", 0) for a in answer.attempts)}
    out["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
    if ref.rows is None:
        out["right"], out["reason"] = False, None
    else:
        out["reason"] = why_wrong(ref.columns, ref.rows, out["error"], columns=columns, rows=rows,
                                  ordered=ref.ordered, order_key=ref.order_key)
        out["right"] = out["reason"] is None
    return out


def _verdict(before: dict[str, Any], after: dict[str, Any], ref: Reference) -> str:
    if ref.suspect is not None:
        return "suspect"
    return {(True, True): "kept", (True, False): "regressed", (False, True): "fixed",
            (False, False): "still_wrong"}[(before["right"], after["right"])]


@dataclass(slots=True)
class RegressionReport:
    before: str
    after: str
    items: list[dict[str, Any]]
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    @property
    def regressions(self) -> list[dict[str, Any]]:
        return [i for i in self.items if i["verdict"] == "regressed"]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("replayed", "regressed", "fixed", "kept", "still_wrong", "suspect"), 0)
        counts["replayed"] = len(self.items)
        for item in self.items:
            counts[item["verdict"]] += 1
        return counts

    def cost(self) -> dict[str, dict[str, Any]]:
        out = {}
        for side in ("before", "after"):
            answers = [i[side] for i in self.items]
            latencies = [a["latency_ms"] for a in answers]
            out[side] = {"llm_calls": sum(a["llm_calls"] for a in answers),
                         "prompt_tokens": sum(a["prompt_tokens"] for a in answers),
                         "completion_tokens": sum(a["completion_tokens"] for a in answers),
                         "latency_ms_p50": percentile(latencies, 50), "latency_ms_p95": percentile(latencies, 95)}
        return out

    def summary(self) -> list[dict[str, Any]]:
        """Each regression in one line: the question, the reason and the SQL before and after."""
        return [{"key": i["key"], "database": i["database"], "question": i["question"],
                 "reason": i["after"]["reason"], "before_sql": i["before"]["sql"], "after_sql": i["after"]["sql"]}
                for i in self.regressions]

    def as_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "created_at": self.created_at,
                "counts": self.counts(), "cost": self.cost(), "regressions": self.summary(), "items": self.items}


async def replay(state: GatewayState, items: Sequence[VerifiedItem], before: Variant, after: Variant, *,
                 concurrency: int = 2) -> RegressionReport:
    """Ask every verified question under ``before`` and ``after`` and compare both with the reference."""
    slots = asyncio.Semaphore(max(1, concurrency))
    tally = Tally()  # the replays' answers must not move the serving ratios

    async def one(item: VerifiedItem) -> dict[str, Any]:
        async with slots:
            ref = await run_reference(state, item)
            was = await answer_under(state, before, item, ref, tally)
            now = await answer_under(state, after, item, ref, tally)
        return {**item.as_dict(), "verdict": _verdict(was, now, ref), "suspect": ref.suspect,
                "reference_error": ref.error, "before": was, "after": now}

    found = await asyncio.gather(*(one(i) for i in items))
    return RegressionReport(before.label, after.label, list(found))


def render_report(report: dict[str, Any]) -> str:
    """The report for a terminal: counts, cost, then each regression with its reason and both SQLs."""
    counts, cost = report["counts"], report["cost"]
    lines = [f"replayed {counts['replayed']} verified question(s): {report['before']} -> {report['after']}",
             "  " + ", ".join(f"{k} {v}" for k, v in counts.items() if k != "replayed")]
    for side in ("before", "after"):
        c = cost[side]
        lines.append(f"  {side}: {c['llm_calls']} LLM call(s), {c['prompt_tokens'] + c['completion_tokens']} "
                     f"token(s), p50 {c['latency_ms_p50'] or 0:.0f} ms, p95 {c['latency_ms_p95'] or 0:.0f} ms")
    regressions = report["regressions"]
    lines += ["", f"regressions (right before, wrong now): {len(regressions)}" if regressions
              else "no regression"]
    for r in regressions:
        lines += [f"  [{r['key']}] {r['database']}: {r['question']}", f"    reason: {r['reason']}",
                  f"    before: {r['before_sql'] or '-'}", f"    after:  {r['after_sql'] or '-'}"]
    suspects = [i for i in report["items"] if i["verdict"] == "suspect"]
    if suspects:
        lines += ["", "suspect references (not counted):"]
        lines += [f"  [{i['key']}] {i['question']}: {i['suspect']}" for i in suspects]
    return "\n".join(lines) + "\n"
