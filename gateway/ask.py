"""The question loop behind ``POST /v1/ask``: context -> generate -> check -> execute -> validate ->
(reflect -> check -> execute -> validate)* -> respond.

Each attempt is checked by the static safety check first; SQL that fails it is never executed and becomes
a ``blocked`` finding for the next reflection. The loop stops when an attempt passes (no finding the
database's policy reflects on), when the LLM repeats an earlier SQL, after ``ask.max_iterations``
reflections, or when the question's time budget is spent. The answer is the best attempt (see
:func:`gateway.respond.choose`), so a reflection can never make an answer worse than one already found.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway import errors
from gateway.client_sql import check_sql, query_hash
from gateway.context import Context, build_context
from gateway.corrections import Correction
from gateway.execute import QueryResult, Target, run_query
from gateway.generate import Drafted, generate, normalize_sql
from gateway.judge import judge
from gateway.llm import MIN_CALL_S, LLMClient
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.reflect import guideline_applies, hidden_names, mask, reflect
from gateway.respond import Answer, Attempt, Source, choose, status_of
from gateway.rules import RuleSet, rule_findings
from gateway.settings import AskPolicy
from gateway.state import GatewayState
from gateway.validate import Finding, ResultView, blocked, check_result, exec_error, from_rule, triggers

log = get_logger(__name__)

OnAttempt = Callable[[Attempt], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Question:
    database: str
    question: str
    evidence: str | None = None
    max_rows: int | None = None
    request_id: str | None = None
    role: str | None = None  # the Postgres role of the caller's API key: every attempt runs as it


OFFLINE_QUESTIONS_SHOWN = 10


def llm_for(state: GatewayState, target: Target) -> tuple[LLMClient, str]:
    """The client and model for a database, or ``llm_not_configured`` naming the settings to set."""
    model = target.settings.ask.model or state.settings.llm.model
    if state.llm is None or model is None:
        missing = [name for name, ok in (("llm.base_url or OPENAI_BASE_URL (or an OPENAI_API_KEY for OpenAI)",
                                          state.llm is not None), ("llm.model", model is not None)) if not ok]
        raise errors.LLMNotConfigured("POST /v1/ask needs an LLM; set " + " and ".join(missing), missing=missing)
    return state.llm, model


async def _offline_answers_only(state: GatewayState, q: Question, exc: errors.LLMNotConfigured
                                ) -> errors.LLMNotConfigured:
    """With no LLM only verified questions are answered: name some, and how to add an LLM."""
    questions: list[str] = []
    if state.store is not None:
        from gateway.store import examples

        try:
            questions = await examples.questions(state.store.pool, q.database, OFFLINE_QUESTIONS_SHOWN)
        except Exception as lookup:  # noqa: BLE001 - the hint is a courtesy; the answer stays llm_not_configured
            log.warning("verified_questions_unavailable", database=q.database, error=str(lookup))
    listed = "; ".join(f"{question!r}" for question in questions) or "none are stored yet"
    return errors.LLMNotConfigured(
        f"{exc.detail}. Without an LLM only verified questions are answered, asked exactly as stored, e.g.: "
        f"{listed}. To ask anything else, stop the gateway and start it again with an LLM in the environment: "
        "OPENAI_API_KEY=sk-... (or OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama) and "
        "NL2SQL_LLM__MODEL=<model>, e.g. `NL2SQL_LLM__MODEL=gpt-4o-mini OPENAI_API_KEY=sk-... nl2sql-gateway demo`",
        **exc.extra, verified_questions=questions)


@dataclass(slots=True)
class _Run:
    """One question in flight: what every attempt needs."""

    state: GatewayState
    q: Question
    target: Target
    llm: LLMClient | None  # None only for a verified example answered without the LLM
    model: str | None
    policy: AskPolicy
    deadline: float
    ctx: Context | None
    ruleset: RuleSet


async def ask(state: GatewayState, q: Question, on_attempt: OnAttempt | None = None) -> Answer:
    """Answer ``q``; ``on_attempt`` sees each attempt as soon as it is validated (for streaming)."""
    target = state.target(q.database)
    policy = target.settings.ask
    deadline = time.monotonic() + min(policy.time_budget_s, state.settings.server.request_timeout_s)
    if state.settings.store.exact_match_answers:
        verified = await _answer_verified(state, q, target, policy, deadline, on_attempt)
        if verified is not None:
            return verified
    try:
        llm, model = llm_for(state, target)
    except errors.LLMNotConfigured as exc:
        if state.settings.store.exact_match_answers:  # the demo's offline mode: say what does work
            raise await _offline_answers_only(state, q, exc) from None
        raise
    ctx = await build_context(state, q.database, q.question, q.evidence)
    run = _Run(state, q, target, llm, model, policy, deadline, ctx, state.ruleset(q.database))
    guideline = ctx.guideline.text.strip() if ctx.guideline and ctx.guideline.text else ""
    attempts: list[Attempt] = []
    seen: set[str] = set()

    async def record(attempt: Attempt) -> None:
        attempts.append(attempt)
        _log_attempt(q.database, attempt)
        if on_attempt is not None:
            await on_attempt(attempt)

    began = time.perf_counter()
    drafted = await generate(llm, ctx, q.question, q.evidence, model=model, temperature=policy.temperature,
                             deadline=deadline)
    attempt = await _evaluate(run, 1, "generation", drafted, began, guideline_applied=False)
    if attempt.sql:
        seen.add(normalize_sql(attempt.sql))
    await record(attempt)

    stop_reason = "passed"
    reflections = 0
    while True:
        codes = attempt.triggers
        review = not codes and attempt.passed and reflections == 0 and policy.guideline_scenario == "all" \
            and bool(guideline)
        if attempt.passed and not review:
            stop_reason = "passed"
            break
        if reflections >= policy.max_iterations:
            stop_reason = "max_iterations"
            break
        if deadline - time.monotonic() < MIN_CALL_S:
            stop_reason = "time_budget"
            break
        codes = codes or ["guideline_review"]
        applied = bool(guideline) and guideline_applies(policy, codes)
        metrics.REFLECTIONS.labels(q.database, codes[0]).inc()
        began = time.perf_counter()
        try:
            drafted = await reflect(llm, ctx, q.question, q.evidence, attempts, codes,
                                    guideline=guideline if applied else None, policy=state.policy(q.database),
                                    model=model, temperature=policy.temperature, deadline=deadline)
        except (errors.LLMUnavailable, errors.DeadlineExceeded, errors.LLMBadOutput) as exc:
            if all(a.sql is None for a in attempts):
                raise
            # Keep the trace (and any result) rather than lose it to a failing or slow reflection.
            stop_reason = "time_budget" if isinstance(exc, errors.DeadlineExceeded) else exc.code
            break
        reflections += 1
        key = normalize_sql(drafted.sql) if drafted.sql else None
        if key is not None and key in seen:
            attempt = _repeated(len(attempts) + 1, drafted, began, applied)
            await record(attempt)
            stop_reason = "repeated_sql"
            break
        if key is not None:
            seen.add(key)
        attempt = await _evaluate(run, len(attempts) + 1, "reflection", drafted, began, guideline_applied=applied)
        await record(attempt)

    if all(a.sql is None for a in attempts):
        _count(q.database, errors.LLMBadOutput.code, attempts, None)
        raise errors.LLMBadOutput(
            f"none of the LLM's {len(attempts)} answer(s) contained SQL", attempts=[a.as_dict() for a in attempts]
        )
    chosen = choose(attempts)
    answer = Answer(
        status=status_of(chosen), database=q.database, question=q.question, chosen=chosen, attempts=attempts,
        stop_reason=stop_reason, guideline_version=ctx.guideline.version if ctx.guideline else None,
        guideline_applied=any(a.guideline_applied for a in attempts), request_id=q.request_id,
    )
    _count(q.database, answer.status, attempts, chosen)
    return answer


async def _answer_verified(state: GatewayState, q: Question, target: Target, policy: AskPolicy, deadline: float,
                           on_attempt: OnAttempt | None) -> Answer | None:
    """Answer with a verified example's SQL, without the LLM, when the question matches one exactly and its
    SQL still passes check, execution and validation; None otherwise (the LLM answers as usual)."""
    try:
        example = await state.examples.exact(q.database, q.question)
    except errors.GatewayError as exc:  # store down: the LLM path still works
        log.warning("verified_lookup_failed", database=q.database, code=exc.code)
        return None
    if example is None:
        return None
    began = time.perf_counter()
    run = _Run(state, q, target, None, None, policy, deadline, None, state.ruleset(q.database))
    timings = {"llm_ms": 0.0, "check_ms": 0.0, "db_ms": 0.0, "acquire_ms": 0.0}
    findings, result = await _check_and_run(run, example.sql, timings)
    timings["total_ms"] = (time.perf_counter() - began) * 1000
    attempt = Attempt(n=1, source="verified_example", sql=example.sql, findings=findings,
                      triggers=triggers(findings, policy), guideline_applied=False,
                      tokens={"prompt": 0, "completion": 0}, timings=timings)
    attempt.result = result
    if not attempt.passed:
        log.info("verified_example_stale", database=q.database, codes=attempt.codes)
        return None
    _log_attempt(q.database, attempt)
    if on_attempt is not None:
        await on_attempt(attempt)
    answer = Answer(status=status_of(attempt), database=q.database, question=q.question, chosen=attempt,
                    attempts=[attempt], stop_reason="verified_example", guideline_version=None,
                    guideline_applied=False, request_id=q.request_id)
    _count(q.database, answer.status, [attempt], attempt)
    return answer


async def _evaluate(run: _Run, n: int, source: Source, drafted: Drafted, began: float, *,
                    guideline_applied: bool) -> Attempt:
    """Check, execute and validate one drafted SQL."""
    reply = drafted.reply
    attempt = Attempt(n=n, source=source, sql=drafted.sql, guideline_applied=guideline_applied,
                      tokens={"prompt": reply.prompt_tokens, "completion": reply.completion_tokens})
    timings = {"llm_ms": reply.llm_ms, "check_ms": 0.0, "db_ms": 0.0, "acquire_ms": 0.0}
    findings: list[Finding] = []
    if drafted.sql is None:
        findings.append(Finding("no_sql", "no SQL statement could be read from the LLM's answer"))
    else:
        findings, result = await _check_and_run(run, drafted.sql, timings)
        attempt.result = result
    attempt.findings = findings
    attempt.triggers = triggers(findings, run.policy)
    if attempt.result is not None and run.policy.llm_judge and not attempt.triggers and run.llm is not None:
        finding, judged = await judge(run.llm, run.q.question, run.q.evidence, drafted.sql or "", attempt.result,
                                      model=run.model or "", deadline=run.deadline)
        if judged is not None:
            timings["llm_ms"] += judged.llm_ms
            attempt.tokens["prompt"] += judged.prompt_tokens
            attempt.tokens["completion"] += judged.completion_tokens
        if finding is not None:
            attempt.findings.append(finding)
            attempt.triggers = triggers(attempt.findings, run.policy)
    timings["total_ms"] = (time.perf_counter() - began) * 1000
    attempt.timings = timings
    return attempt


async def _check_and_run(run: _Run, sql: str, timings: dict[str, float]) -> tuple[list[Finding], QueryResult | None]:
    started = time.perf_counter()
    try:
        verdict = check_sql(run.state, sql, run.q.database)
    except errors.SqlTooLarge as exc:
        timings["check_ms"] = (time.perf_counter() - started) * 1000
        return [blocked([exc.code], [exc.detail])], None
    timings["check_ms"] = (time.perf_counter() - started) * 1000
    if not verdict.allowed:
        names = hidden_names(run.state.policy(run.q.database))  # a finding names what it refused
        return [blocked(verdict.codes, [mask(f.message, names) for f in verdict.findings])], None  # never run
    try:
        result = await run_query(run.target, sql, max_rows=run.q.max_rows, role=run.q.role)
    except errors.DatabaseUnavailable:
        raise  # the database, not the SQL, is at fault: no reflection can fix it
    except errors.GatewayError as exc:
        # Postgres hints name similar columns ("Perhaps you meant customers.ssn"): mask hidden ones for the
        # LLM and the client alike.
        names = hidden_names(run.state.policy(run.q.database))
        extra = {**exc.extra, **{k: mask(str(exc.extra[k]), names) for k in ("message", "hint") if exc.extra.get(k)}}
        return [exec_error(exc.code, mask(exc.detail, names), extra)], None
    timings["db_ms"] = result.timings.get("db_ms", 0.0)
    timings["acquire_ms"] = result.timings.get("acquire_ms", 0.0)
    view = ResultView(run.q.question, [c.name for c in result.columns], result.rows, result.truncated)
    findings = check_result(view)
    findings += [from_rule(v) for v in rule_findings(run.ruleset, sql, result.columns, result.rows)]
    return findings, result


def _repeated(n: int, drafted: Drafted, began: float, guideline_applied: bool) -> Attempt:
    reply = drafted.reply
    finding = Finding("repeated_sql", "the reflection returned SQL that was already tried; it was not run again")
    return Attempt(n=n, source="reflection", sql=drafted.sql, findings=[finding], triggers=[],
                   guideline_applied=guideline_applied,
                   tokens={"prompt": reply.prompt_tokens, "completion": reply.completion_tokens},
                   timings={"llm_ms": reply.llm_ms, "check_ms": 0.0, "db_ms": 0.0, "acquire_ms": 0.0,
                            "total_ms": (time.perf_counter() - began) * 1000})


def corrections_of(answer: Answer, q: Question) -> list[Correction]:
    """One correction per distinct earlier SQL that did not pass, when a later attempt did."""
    chosen = answer.chosen
    if chosen is None or not chosen.passed or chosen.sql is None:
        return []
    out: list[Correction] = []
    done: set[str] = set()
    for attempt in answer.attempts:
        if attempt.n >= chosen.n:
            break
        if attempt.sql is None or attempt.passed or normalize_sql(attempt.sql) in done:
            continue
        done.add(normalize_sql(attempt.sql))
        out.append(Correction(question=q.question, evidence=q.evidence, database=q.database,
                              incorrect_sql=attempt.sql, corrected_sql=chosen.sql,
                              findings=[f.as_dict() for f in attempt.findings], request_id=q.request_id))
    return out


_tally: dict[str, list[int]] = {}  # database -> [questions, first passes, final passes], for the ratio gauges


def _count(database: str, status: str, attempts: list[Attempt], chosen: Attempt | None) -> None:
    metrics.ASK.labels(database, status).inc()
    metrics.ATTEMPTS.observe(len(attempts))
    first = bool(attempts) and attempts[0].passed
    final = chosen is not None and chosen.passed
    if first:
        metrics.FIRST_PASS.labels(database).inc()
    if final:
        metrics.FINAL_PASS.labels(database).inc()
    tally = _tally.setdefault(database, [0, 0, 0])
    tally[0] += 1
    tally[1] += first
    tally[2] += final
    metrics.FIRST_PASS_RATIO.labels(database).set(tally[1] / tally[0])
    metrics.FINAL_PASS_RATIO.labels(database).set(tally[2] / tally[0])


def _log_attempt(database: str, attempt: Attempt) -> None:
    t = attempt.timings
    log.info("ask_attempt", database=database, n=attempt.n, source=attempt.source,
             query_hash=query_hash(attempt.sql) if attempt.sql else None, codes=attempt.codes,
             triggers=attempt.triggers, passed=attempt.passed, guideline_applied=attempt.guideline_applied,
             rows=attempt.result.row_count if attempt.result else None,
             llm_ms=round(t.get("llm_ms", 0.0), 3), check_ms=round(t.get("check_ms", 0.0), 3),
             db_ms=round(t.get("db_ms", 0.0), 3), total_ms=round(t.get("total_ms", 0.0), 3),
             prompt_tokens=attempt.tokens["prompt"], completion_tokens=attempt.tokens["completion"])


async def ask_events(state: GatewayState, q: Question, answers: list[Answer]) -> AsyncIterator[tuple[str, Any]]:
    """``("attempt", attempt)`` as each attempt is validated, then ``("answer", answer)``; the answer is also
    appended to ``answers``. Errors raise after the attempts already produced; closing the iterator (a client
    that went away) cancels the question."""
    queue: asyncio.Queue[Attempt | None] = asyncio.Queue()

    async def on_attempt(attempt: Attempt) -> None:
        queue.put_nowait(attempt)

    task = asyncio.create_task(ask(state, q, on_attempt))
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (item := await queue.get()) is not None:
            yield "attempt", item.as_dict()
        answer = task.result()
        answers.append(answer)
        yield "answer", answer.as_dict()
    finally:
        if not task.done():
            task.cancel()
