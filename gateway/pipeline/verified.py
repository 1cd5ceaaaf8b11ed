"""Answers that need no LLM: a verified example's SQL for a question asked exactly as stored.

Its SQL still goes through check, execution and validation on every use (a rule added since it was
approved still applies); a stale example falls back to the LLM. Without an LLM, these are the only
questions answered, and the error says which ones exist.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from gateway import errors
from gateway.execute import QueryResult
from gateway.findings import Finding
from gateway.observability.logging import get_logger
from gateway.pipeline.question import Question
from gateway.pipeline.respond import Answer, Attempt, status_of
from gateway.pipeline.tally import log_attempt
from gateway.pipeline.validate import triggers
from gateway.settings import AskPolicy
from gateway.state import GatewayState

log = get_logger(__name__)

OnAttempt = Callable[[Attempt], Awaitable[None]]
# check, execute and validate one SQL text for the question: its findings and, when it ran, its result
CheckAndRun = Callable[[str, dict[str, float]], Awaitable[tuple[list[Finding], QueryResult | None]]]

OFFLINE_QUESTIONS_SHOWN = 10


async def offline_answers_only(state: GatewayState, q: Question, exc: errors.LLMNotConfigured
                                ) -> errors.LLMNotConfigured:
    """With no LLM only verified questions are answered: name some, and how to add an LLM."""
    questions: list[str] = []
    # Verified questions are everyone's: a caller under a row policy is shown none (they may name another
    # tenant's values).
    if state.store is not None and not q.claims:
        from gateway.store import examples

        try:
            # Never the question that just failed (a stale example): it is not answerable now.
            questions = [question for question in
                         await examples.questions(state.store.pool, q.database, OFFLINE_QUESTIONS_SHOWN + 1)
                         if question.strip() != q.question.strip()][:OFFLINE_QUESTIONS_SHOWN]
        except Exception as lookup:  # noqa: BLE001 - the hint is a courtesy; the answer stays llm_not_configured
            log.warning("verified_questions_unavailable", database=q.database, error=str(lookup))
    listed = "; ".join(f"{question!r}" for question in questions) or "none are stored yet"
    return errors.LLMNotConfigured(
        f"{exc.detail}. Without an LLM only verified questions are answered, asked exactly as stored, e.g.: "
        f"{listed}. To ask anything else, stop the gateway and start it again with an LLM in the environment: "
        "OPENAI_API_KEY=sk-... (or OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama) and "
        "NL2SQL_LLM__MODEL=<model>, e.g. `NL2SQL_LLM__MODEL=gpt-4o-mini OPENAI_API_KEY=sk-... nl2sql-gateway demo`",
        **exc.extra, verified_questions=questions)



async def answer_verified(state: GatewayState, q: Question, policy: AskPolicy,
                           on_attempt: OnAttempt | None, check_and_run: CheckAndRun) -> Answer | None:
    """Answer with a verified example's SQL, without the LLM, when the question matches one exactly and its
    SQL still passes check, execution and validation; None otherwise (the LLM answers as usual).

    Not for a caller under a row policy: the answer would show another caller's stored SQL, whose literals
    may spell another tenant's values (its prompts show only the examples its view allows)."""
    if q.claims:
        return None
    try:
        example = await state.examples.exact(q.database, q.question)
    except errors.GatewayError as exc:  # store down: the LLM path still works
        log.warning("verified_lookup_failed", database=q.database, code=exc.code)
        return None
    if example is None:
        return None
    began = time.perf_counter()
    timings = {"llm_ms": 0.0, "check_ms": 0.0, "db_ms": 0.0, "acquire_ms": 0.0}
    findings, result = await check_and_run(example.sql, timings)
    timings["total_ms"] = (time.perf_counter() - began) * 1000
    attempt = Attempt(n=1, source="verified_example", sql=example.sql, findings=findings,
                      triggers=triggers(findings, policy), guideline_applied=False,
                      tokens={"prompt": 0, "completion": 0}, timings=timings)
    attempt.result = result
    if not attempt.passed:
        log.info("verified_example_stale", database=q.database, codes=attempt.codes)
        return None
    log_attempt(q.database, attempt)
    if on_attempt is not None:
        await on_attempt(attempt)
    answer = Answer(status=status_of(attempt), database=q.database, question=q.question, chosen=attempt,
                    attempts=[attempt], stop_reason="verified_example", guideline_version=None,
                    guideline_applied=False, request_id=q.request_id)
    state.tally.count(q.database, answer.status, [attempt], attempt)
    return answer


