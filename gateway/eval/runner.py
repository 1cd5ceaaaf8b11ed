"""Run every (scenario, question) pair through the pipeline, score it, and record it durably.

Work is bounded by a semaphore (``concurrency`` questions in flight). Each pair's result is appended to the
run folder the moment it is scored, so Ctrl-C or a crash loses only pairs still in flight; a second run
with the same run id skips what is recorded. Gold SQL runs once per question and run.

An error that says the *infrastructure* is down (LLM endpoint unreachable after the client's retries, the
database or store unavailable, rate limited) stops the run without recording the pair: it is not the
model's answer, and resuming later asks again. Everything else the pipeline raises (no SQL in the LLM's
answers, the time budget spent) is the model's outcome and is recorded as a wrong answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gateway import errors
from gateway.context.model import Guideline
from gateway.eval.questions import Question
from gateway.eval.reasons import why_wrong
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import Scenario
from gateway.eval.score import WRONG, Gold, Verdict, run_gold, score
from gateway.pipeline.respond import Answer, Attempt
from gateway.state import GatewayState

__all__ = ["AnswerFn", "EvalStopped", "RunSummary", "is_transient", "run_eval"]

AnswerFn = Callable[[GatewayState, Question, Scenario, Guideline], Awaitable[Answer]]


class EvalStopped(RuntimeError):
    """The run stopped early because the infrastructure failed; finished results are kept."""


@dataclass
class RunSummary:
    total: int = 0            # pairs in the plan
    skipped: int = 0          # already recorded by an earlier run with this id
    finished: int = 0         # recorded by this run
    correct: int = 0          # of those, right (strict EX)
    stopped: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)


def is_transient(exc: errors.GatewayError) -> bool:
    """Infrastructure trouble (503, 429 and friends), as opposed to an outcome of the model's work."""
    return exc.status in (429, 503)


async def run_eval(
    state: GatewayState,
    folder: RunFolder,
    questions: Sequence[Question],
    scenarios: Sequence[Scenario],
    guidelines: dict[tuple[str, str], Guideline],
    answer_fn: AnswerFn,
    *,
    concurrency: int = 4,
    progress: bool = True,
) -> RunSummary:
    """Answer and score every pair not yet recorded in ``folder``; ``guidelines`` maps (database, choice)."""
    done = folder.finished()
    plan = [(s, q) for s in scenarios for q in questions]
    todo = [(s, q) for s, q in plan if (s.name, q.id) not in done]
    summary = RunSummary(total=len(plan), skipped=len(plan) - len(todo))
    golds: dict[str, asyncio.Task[Gold]] = {}
    slots = asyncio.Semaphore(max(1, concurrency))

    def gold_of(q: Question) -> asyncio.Task[Gold]:
        if q.id not in golds:
            golds[q.id] = asyncio.ensure_future(run_gold(state, q))
        return golds[q.id]

    async def one(scenario: Scenario, q: Question) -> None:
        async with slots:
            gold = await gold_of(q)
            guideline = guidelines[(q.database, scenario.guideline)]
            record = await _answer_and_score(state, q, scenario, guideline, gold, answer_fn)
        folder.append_result(record)
        summary.finished += 1
        summary.correct += bool(record.get("correct"))
        summary.results.append(record)
        bar.advance(summary)

    bar = _Progress(enabled=progress, total=len(plan), done=summary.skipped)
    tasks = [asyncio.ensure_future(one(s, q)) for s, q in todo]
    try:
        with bar:
            for next_done in asyncio.as_completed(tasks):
                try:
                    await next_done
                except errors.GatewayError as exc:
                    if not is_transient(exc):
                        raise
                    summary.stopped = f"{exc.code}: {exc.detail}"
                    raise EvalStopped(summary.stopped) from exc
    finally:
        for task in (*tasks, *golds.values()):
            task.cancel()
        await asyncio.gather(*tasks, *golds.values(), return_exceptions=True)
    return summary


async def _answer_and_score(state: GatewayState, q: Question, scenario: Scenario, guideline: Guideline, gold: Gold,
                            answer_fn: AnswerFn) -> dict[str, Any]:
    base: dict[str, Any] = {"scenario": scenario.name, "id": q.id, "database": q.database, "category": q.category}
    if gold.error is not None:
        # The question cannot be scored; asking the LLM would only spend tokens.
        return {**base, "status": "gold_error", "gold_error": gold.error, "correct": False, "correct_extra": False,
                "first_correct": False, "attempts": 0, "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                "latency_ms": 0.0, "finished_at": _now()}
    started = time.perf_counter()
    try:
        answer = await answer_fn(state, q, scenario, guideline)
    except errors.GatewayError as exc:
        if is_transient(exc):
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        trace = exc.extra.get("attempts") or []
        return {**base, "status": "error", "error": f"{exc.code}: {exc.detail}", "reason": "error", "correct": False,
                "correct_extra": False, "first_correct": False, "attempts": len(trace), "llm_calls": len(trace),
                "prompt_tokens": sum(a.get("tokens", {}).get("prompt", 0) for a in trace),
                "completion_tokens": sum(a.get("tokens", {}).get("completion", 0) for a in trace),
                "latency_ms": latency_ms, "trace": trace, "finished_at": _now()}
    latency_ms = (time.perf_counter() - started) * 1000
    final = _verdict(gold, answer.chosen, q.question) if answer.status in ("ok", "suspicious") else WRONG
    # With candidates, attempts[0] is the first candidate: drawn exactly as the single generation is.
    first = _verdict(gold, answer.attempts[0], q.question) if answer.attempts else WRONG
    return {
        **base,
        "status": answer.status,
        "sql": answer.chosen.sql if answer.chosen else None,
        "first_sql": answer.attempts[0].sql if answer.attempts else None,
        "correct": final.strict,
        "reason": None if final.strict else _reason(gold, answer),
        "correct_extra": final.extra,
        "correct_defog": final.defog,
        "correct_bird": final.bird,
        "first_correct": first.strict,
        "first_correct_extra": first.extra,
        "attempts": len(answer.attempts),
        "llm_calls": len(answer.attempts) + _extra_calls(answer),  # one call per attempt, and see below
        "prompt_tokens": sum(a.tokens.get("prompt", 0) for a in answer.attempts),
        "completion_tokens": sum(a.tokens.get("completion", 0) for a in answer.attempts),
        "latency_ms": latency_ms,
        "stop_reason": answer.stop_reason,
        "guideline_version": answer.guideline_version,
        "guideline_applied": answer.guideline_applied,
        # Asked back instead of answering: scored as not correct, counted apart (report: clarifications).
        "clarification": answer.clarification.as_dict() if answer.clarification else None,
        "trace": [a.as_dict() for a in answer.attempts],
        # per attempt, strict EX (None: not run because it repeated an earlier SQL); with the trace's
        # findings this gives each finding code's precision and recall (see gateway.eval.report)
        "attempt_correct": [None if a.codes == ["repeated_sql"] else _verdict(gold, a, q.question).strict
                            for a in answer.attempts],
        **_candidates(gold, answer, q.question),
        "finished_at": _now(),
    }


def _reason(gold: Gold, answer: Answer) -> str | None:
    """Why the final answer is wrong, against the first gold alternative (see :mod:`gateway.eval.reasons`)."""
    if not gold.alternatives:
        return None
    alt, chosen = gold.alternatives[0], answer.chosen
    result = chosen.result if chosen is not None and answer.status in ("ok", "suspicious") else None
    error = None
    if result is None:
        codes = ", ".join(chosen.codes) if chosen is not None else ""
        error = f"{answer.status}: {codes or answer.stop_reason}"
    return why_wrong(alt.columns, alt.rows, error, columns=[c.name for c in result.columns] if result else None,
                     rows=result.rows if result else None, ordered=alt.ordered, order_key=alt.order_key)


def _extra_calls(answer: Answer) -> int:
    """Calls no attempt shows: candidates cancelled once a majority agreed (sent, so paid for) and the
    selector's tie-break."""
    if answer.candidates is None:
        return 0
    return len(answer.candidates.get("cancelled", [])) + int("selector" in answer.candidates)


def _candidates(gold: Gold, answer: Answer, question: str) -> dict[str, Any]:
    """With several candidates: how they were chosen among, and whether any of them was right (what a
    perfect selector would have scored)."""
    if answer.candidates is None:
        return {}
    drawn = [a for a in answer.attempts if a.source == "candidate"]
    return {"candidates": answer.candidates["n"], "selection": answer.candidates["selection"],
            "agreement": answer.candidates["agreement"],
            "any_candidate_correct": any(_verdict(gold, a, question).strict for a in drawn)}


def _verdict(gold: Gold, attempt: Attempt | None, question: str) -> Verdict:
    result = attempt.result if attempt is not None else None
    if result is None:
        return WRONG
    return score(gold, [c.name for c in result.columns], result.rows, question=question)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Progress:
    """A rich progress bar with the finished count, running EX and ETA; a no-op when disabled."""

    def __init__(self, *, enabled: bool, total: int, done: int) -> None:
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None
        self.total, self.done = total, done

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]eval[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=self.total, completed=self.done)
        return self

    def advance(self, summary: RunSummary) -> None:
        if self._progress is not None:
            ex = summary.correct / summary.finished if summary.finished else 0.0
            self._progress.update(self._task, advance=1, description=f"EX so far {ex:.1%}")

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
