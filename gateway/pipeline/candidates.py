"""Candidates: several first-pass generations side by side, chosen by what their SQL returns.

With ``ask.candidates = n`` above 1, the first pass draws n SQL candidates at once instead of one: the first
with the plain generation prompt and the database's temperature (exactly the single generation), each later
one with a way of working added to the prompt (:data:`gateway.pipeline.prompts.CANDIDATE_STRATEGIES`, in
turn) and ``ask.candidate_temperature``. Each is checked, run and validated like any attempt. Candidates
that pass are grouped by result equivalence (:func:`gateway.sql.equivalence.same_result`): independent drafts
that return the same rows are likely right together. The largest group wins and its lowest-numbered
candidate becomes the answer; a tie between equally large groups goes to ``ask.selector`` (``first``: the
group of the lowest-numbered candidate; ``llm``: one more LLM call picks). When none passes, the candidates
that ran are grouped the same way, else the best-ranked one is taken, and reflection works on that one.

Candidates share the question's deadline and the LLM client's concurrency bound. One whose call fails or
times out becomes a ``no_sql`` attempt with the error, and the others carry on; only when every call fails
does the question fail, as a single generation would. Once a strict majority of the n candidates agrees,
no later candidate can change the winner, so those still running are cancelled, except the first: it is the
single generation that the trace and ``eval`` compare the choice against.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gateway import errors
from gateway.context.model import Context
from gateway.findings import Finding
from gateway.llm.client import LLM, LLMReply
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.pipeline import prompts
from gateway.pipeline.generate import (
    Drafted,
    context_block,
    extract_sql,
    generation_messages,
    preview_rows,
    question_block,
)
from gateway.pipeline.question import Question
from gateway.pipeline.respond import Attempt, Source
from gateway.pipeline.tally import log_attempt
from gateway.settings import AskPolicy
from gateway.sql.equivalence import gold_is_ordered, same_result

log = get_logger(__name__)

PLAIN = "plain"  # the first candidate: the single generation's prompt, unchanged
_CHOICE = re.compile(r"<choice>\s*(\d+)\s*</choice>", re.IGNORECASE)

# check, execute and validate one drafted SQL as attempt number n
Evaluate = Callable[[int, Source, Drafted, float], Awaitable[Attempt]]
OnAttempt = Callable[[Attempt], Awaitable[None]]
OnCandidates = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Draw:
    """How one candidate is drawn: its number (1-based), the prompt variant and the temperature."""

    index: int
    variant: str
    temperature: float | None


@dataclass(slots=True)
class Pick:
    """The first pass with candidates: every finished candidate (by number), the one chosen, and a summary
    (groups, sizes, how the choice was made) for the answer and the event stream."""

    attempts: list[Attempt]
    chosen: Attempt
    summary: dict[str, Any]


def draws(policy: AskPolicy) -> list[Draw]:
    """The n draws of a policy: the plain prompt first, then the strategies in turn.

    >>> [(d.index, d.variant) for d in draws(AskPolicy(candidates=4))]
    [(1, 'plain'), (2, 'plan'), (3, 'divide'), (4, 'values')]
    """
    strategies = list(prompts.CANDIDATE_STRATEGIES)
    later = [Draw(i, strategies[(i - 2) % len(strategies)], policy.candidate_temperature)
             for i in range(2, policy.candidates + 1)]
    return [Draw(1, PLAIN, policy.temperature), *later]


def candidate_messages(ctx: Context, question: str, evidence: str | None, variant: str, *,
                       earlier: str = "") -> list[dict[str, str]]:
    """The generation prompt, with the variant's way of working added to the user message."""
    messages = generation_messages(ctx, question, evidence, earlier=earlier)
    if variant != PLAIN:
        messages[-1] = {**messages[-1], "content": messages[-1]["content"]
                        + "\n\n## How to work this one out\n" + prompts.CANDIDATE_STRATEGIES[variant]}
    return messages


def agree(a: Attempt, b: Attempt) -> bool:
    """Two candidates that ran return the same result: same rows (as a multiset, or in sequence when both
    order them or a row cap cut them), same number of columns in any order, names ignored."""
    ra, rb = a.result, b.result
    if ra is None or rb is None or ra.truncated != rb.truncated:
        return False
    ordered = ra.truncated or (gold_is_ordered(a.sql or "") and gold_is_ordered(b.sql or ""))
    try:
        return same_result(ra.columns, ra.rows, rb.columns, rb.rows, ordered=ordered)
    except ValueError:  # a malformed row: nothing to agree on
        return False


def group(attempts: Sequence[Attempt]) -> list[list[Attempt]]:
    """Candidates that ran, grouped by :func:`agree` with each group's first member; largest group first,
    equally large ones in the order of their lowest-numbered candidate."""
    groups: list[list[Attempt]] = []
    for attempt in sorted(attempts, key=lambda a: a.n):
        home = next((g for g in groups if agree(g[0], attempt)), None)
        if home is None:
            groups.append([attempt])
        else:
            home.append(attempt)
    return sorted(groups, key=lambda g: -len(g))  # stable: ties keep the lowest-numbered first


async def first_pass(llm: LLM, ctx: Context, q: Question, policy: AskPolicy, *, model: str, deadline: float,
                     evaluate: Evaluate, on_attempt: OnAttempt | None = None,
                     on_candidates: OnCandidates | None = None, earlier: str = "") -> Pick:
    """Draw, run and choose among ``policy.candidates`` candidates (see the module docstring); ``earlier``: the
    conversation's earlier turns, as every candidate's prompt carries them (candidates never offer to clarify)."""
    planned = draws(policy)
    n = len(planned)

    async def one(draw: Draw) -> tuple[Attempt, errors.GatewayError | None]:
        began = time.perf_counter()
        failure: errors.GatewayError | None = None
        try:
            reply = await llm.complete(candidate_messages(ctx, q.question, q.evidence, draw.variant, earlier=earlier),
                                       purpose="generate", model=model, temperature=draw.temperature,
                                       deadline=deadline)
        except errors.GatewayError as exc:  # this candidate is lost; the others carry on
            attempt, failure = _lost(draw.index, exc, began), exc
        else:
            attempt = await evaluate(draw.index, "candidate", Drafted(extract_sql(reply.text), reply), began)
        attempt.candidate = {"variant": draw.variant, "temperature": draw.temperature}
        return attempt, failure

    tasks = {asyncio.ensure_future(one(draw)): draw for draw in planned}
    finished: list[Attempt] = []
    failures: list[errors.GatewayError] = []
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: tasks[t].index):
                attempt, failure = task.result()
                finished.append(attempt)
                if failure is not None:
                    failures.append(failure)
                log_attempt(q.database, attempt)
                if on_attempt is not None:
                    await on_attempt(attempt)
            if pending and _settled(finished, n):
                break
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if len(failures) == len(finished) == n:
        raise failures[0]  # every call failed: the question fails as a single generation would
    finished.sort(key=lambda a: a.n)
    chosen, summary = await _choose(llm, ctx, q, policy, finished, n, model=model, deadline=deadline)
    summary["cancelled"] = sorted(d.index for d in planned if d.index not in {a.n for a in finished})
    metrics.CANDIDATE_SELECTIONS.labels(q.database, summary["selection"]).inc()
    metrics.CANDIDATE_AGREEMENT.labels(q.database).observe(summary["agreement"])
    log.info("ask_candidates", database=q.database, **{k: summary[k] for k in ("n", "selection", "agreement",
                                                                                 "chosen", "cancelled")},
             group_sizes=[g["size"] for g in summary["groups"]])
    if on_candidates is not None:
        await on_candidates(summary)
    return Pick(finished, chosen, summary)


def _settled(finished: list[Attempt], n: int) -> bool:
    """A strict majority of all n candidates passed with one result (nothing left can outvote it), and the
    first candidate, the single-generation baseline, is among the finished ones."""
    if not any(a.n == 1 for a in finished):
        return False
    passing = [a for a in finished if a.passed]
    return bool(passing) and len(group(passing)[0]) * 2 > n


async def _choose(llm: LLM, ctx: Context, q: Question, policy: AskPolicy, finished: list[Attempt], n: int, *,
                  model: str, deadline: float) -> tuple[Attempt, dict[str, Any]]:
    passing = [a for a in finished if a.passed]
    contenders = passing or [a for a in finished if a.ran]
    groups = group(contenders)
    selector: dict[str, Any] | None = None
    reply: LLMReply | None = None
    if not groups:  # nothing ran: the best-ranked candidate (blocked before failed before no SQL)
        chosen = max(finished, key=lambda a: (a.rank(), -a.n))
        selection = "none_ran"
    else:
        tied = [g for g in groups if len(g) == len(groups[0])]
        winner = tied[0]
        if not passing:
            selection = "none_passed"
        elif len(tied) == 1:
            selection = "unanimous" if len(winner) == n else "largest_group"
        elif policy.selector == "llm":
            picked, selector, reply = await select_with_llm(llm, ctx, q, [g[0] for g in tied], model=model,
                                                            deadline=deadline)
            winner = tied[picked] if picked is not None else winner
            selection = "tie_selector" if picked is not None else "tie_first"
        else:
            selection = "tie_first"
        chosen = winner[0]
        if reply is not None:  # the selector's call is booked on the answer it chose, like the judge's
            chosen.tokens["prompt"] += reply.prompt_tokens
            chosen.tokens["completion"] += reply.completion_tokens
            chosen.timings["llm_ms"] = chosen.timings.get("llm_ms", 0.0) + reply.llm_ms
    in_groups = {a.n for g in groups for a in g}
    summary: dict[str, Any] = {
        "n": n,
        "chosen": chosen.n,
        "selection": selection,
        "agreement": round(len(next((g for g in groups if chosen in g), [])) / n, 4) if passing else 0.0,
        "groups": [{"attempts": [a.n for a in g], "size": len(g), "passed": g[0].passed} for g in groups],
        "others": [a.n for a in finished if a.n not in in_groups],  # failed, or ran but lost to passing ones
    }
    if selector is not None:
        summary["selector"] = selector
    return chosen, summary


async def select_with_llm(llm: LLM, ctx: Context, q: Question, options: Sequence[Attempt], *, model: str,
                          deadline: float) -> tuple[int | None, dict[str, Any], LLMReply | None]:
    """Ask the LLM which option answers the question: the option's position, or None when the call fails or
    the answer names no option (the caller then keeps the lowest-numbered group); what happened, for the
    trace; and the reply, whose tokens the caller books."""
    numbers = [a.n for a in options]
    try:
        reply = await llm.complete(selector_messages(ctx, q, options), purpose="select", model=model,
                                   temperature=0.0, deadline=deadline)
    except errors.GatewayError as exc:  # the selector may only break a tie, never fail the question
        log.info("selector_skipped", error=exc.code)
        return None, {"options": numbers, "choice": None, "error": exc.code}, None
    match = _CHOICE.search(reply.text)
    index = int(match.group(1)) - 1 if match else -1
    picked = index if 0 <= index < len(options) else None
    return picked, {"options": numbers, "choice": numbers[picked] if picked is not None else None}, reply


def selector_messages(ctx: Context, q: Question, options: Sequence[Attempt]) -> list[dict[str, str]]:
    shown = []
    for i, attempt in enumerate(options, 1):
        result = attempt.result
        assert result is not None  # only candidates that ran are options
        columns = ", ".join(c.name for c in result.columns)
        shown.append(f"### Option {i}\n```sql\n{attempt.sql}\n```\nResult: {result.row_count}"
                     f"{' or more' if result.truncated else ''} row(s); columns: {columns}\n"
                     + preview_rows(result.rows, limit=10))
    user = "\n\n".join([context_block(ctx, with_examples=False), question_block(q.question, q.evidence),
                        "## Options\n" + "\n\n".join(shown),
                        "Reason inside <thinking>...</thinking>, then answer <choice>N</choice>."])
    return [{"role": "system", "content": prompts.SELECT_SYSTEM}, {"role": "user", "content": user}]


def _lost(index: int, exc: errors.GatewayError, began: float) -> Attempt:
    """A candidate whose LLM call failed: no SQL, and the error that says why."""
    finding = Finding("no_sql", f"the LLM call for this candidate failed ({exc.code}): {exc.detail}",
                      detail={"error": exc.code})
    elapsed = (time.perf_counter() - began) * 1000
    return Attempt(n=index, source="candidate", sql=None, findings=[finding], triggers=["no_sql"],
                   timings={"llm_ms": elapsed, "check_ms": 0.0, "db_ms": 0.0, "acquire_ms": 0.0, "total_ms": elapsed})
