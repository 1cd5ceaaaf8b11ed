"""The question loop behind ``POST /v1/ask``: context -> generate -> check -> execute -> validate ->
(reflect -> check -> execute -> validate)* -> respond.

Each attempt is checked by the static safety check first; SQL that fails it is never executed and becomes
a ``blocked`` finding for the next reflection. The loop stops when an attempt passes (no finding the
database's policy reflects on), when the LLM repeats an earlier SQL, after ``ask.max_iterations``
reflections, or when the question's time budget is spent. The answer is the best attempt (see
:func:`gateway.pipeline.respond.choose`; among equals the earliest), so a reflection can never make an answer
worse than one already found. A reflection that re-states a doubted attempt's SQL (``repeated_sql``) or its
result (``same_result``) upholds it: the answer is ``ok`` with the findings kept, when the doubt was only about
how the result looks (the validation family).
With ``ask.candidates`` > 1 the first generation is several candidates (:mod:`gateway.pipeline.candidates`);
reflection then starts from the one chosen among them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from gateway import errors, row_policy
from gateway.client_sql import check_sql
from gateway.context import Context, build_context
from gateway.execute import QueryResult, Target
from gateway.llm import MIN_CALL_S, LLMClient
from gateway.masking import hidden_names_of
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.pipeline import compiled as compiled_path
from gateway.pipeline import token_budget
from gateway.pipeline.candidates import OnCandidates, first_pass
from gateway.pipeline.check import check
from gateway.pipeline.execute import INFRASTRUCTURE, execute
from gateway.pipeline.generate import Drafted, generate, normalize_sql
from gateway.pipeline.judge import judge
from gateway.pipeline.question import NO_EARLIER, Earlier, Question
from gateway.pipeline.reflect import guideline_applies, reflect
from gateway.pipeline.respond import Answer, Attempt, Source, choose, clarifying_answer, status_of
from gateway.pipeline.tally import log_attempt
from gateway.pipeline.trusted import answer_trusted
from gateway.pipeline.trusted import run as run_template
from gateway.pipeline.validate import Finding, triggers, validate
from gateway.pipeline.verified import OnAttempt, answer_verified, offline_answers_only
from gateway.rules import RuleSet
from gateway.semantic.enforce import semantic_findings
from gateway.semantic.model import SemanticModel
from gateway.semantic.registry import EMPTY as EMPTY_MODEL
from gateway.settings import AskPolicy
from gateway.state import GatewayState
from gateway.templates import Template

log = get_logger(__name__)


def llm_for(state: GatewayState, target: Target) -> tuple[LLMClient, str]:
    """The client and model for a database, or ``llm_not_configured`` naming the settings to set."""
    model = target.settings.ask.model or state.settings.llm.model
    if state.llm is None or model is None:
        missing = [name for name, ok in (("llm.base_url or OPENAI_BASE_URL (or an OPENAI_API_KEY for OpenAI)",
                                          state.llm is not None), ("llm.model", model is not None)) if not ok]
        raise errors.LLMNotConfigured("POST /v1/ask needs an LLM; set " + " and ".join(missing), missing=missing)
    return state.llm, model



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
    hidden: list[str]  # names masked in whatever a finding shows
    semantic: SemanticModel = EMPTY_MODEL  # the metric definitions generated SQL is held to

    async def check_and_run(self, sql: str, timings: dict[str, float],
                            args: tuple[str, ...] = ()) -> tuple[list[Finding], QueryResult | None]:
        """check -> execute -> validate for one SQL text; ``timings`` gets each stage's share. ``args``: the
        values of the text's own ``$1 ...`` (a template's parameters, never spliced into the text)."""
        started = time.perf_counter()
        refused = check(lambda text: check_sql(self.state, text, self.q.database), sql, self.hidden)
        run = None
        if refused is None and (self.q.claims or row_policy.has_row_filters(self.state, self.q.database)):
            # The attempt shows the SQL as the model wrote it; what runs is its row-filtered rewrite, checked
            # again (gateway.row_policy). A missing claim fails the question: no other SQL could run either.
            run = await row_policy.filtered(self.state, self.q.database, sql, self.q.claims,
                                            check_sql(self.state, sql, self.q.database), bound=args)
            refused = check(lambda _text: run.verdict, run.sql, self.hidden)  # type: ignore[union-attr]
        timings["check_ms"] = (time.perf_counter() - started) * 1000
        if refused is not None:
            return [refused], None  # never run
        outcome = await execute(self.target, run.sql if run else sql, max_rows=self.q.max_rows, role=self.q.role,
                                hidden=self.hidden, claims=self.q.claims, args=run.args if run else args)
        if isinstance(outcome, Finding):
            return [outcome], None
        timings["db_ms"] = outcome.timings.get("db_ms", 0.0)
        timings["acquire_ms"] = outcome.timings.get("acquire_ms", 0.0)
        return validate(self.q.question, sql, outcome, self.ruleset) + semantic_findings(self.semantic, sql), outcome


async def ask(state: GatewayState, q: Question, on_attempt: OnAttempt | None = None,
              on_candidates: OnCandidates | None = None, earlier: Earlier = NO_EARLIER) -> Answer:
    """Answer ``q``; ``on_attempt`` sees each attempt as soon as it is validated, ``on_candidates`` the
    candidates' groups once one is chosen (``ask.candidates`` > 1), both for streaming; ``earlier``: what
    the conversation's earlier turns add (``gateway.pipeline.conversation``, which calls this)."""
    target = state.target(q.database)
    policy = target.settings.ask
    deadline = time.monotonic() + min(policy.time_budget_s, state.settings.server.request_timeout_s)
    # The rules in force, looked up once per question: each lookup stats the rule files, and every stage of
    # every attempt needs them. A reload lands with the next question, never halfway through one.
    rules = state.ruleset(q.database)
    semantic = state.semantic_model(q.database)  # fails closed like the rules: broken, never good -> 503
    policy_now = state.policy(q.database)
    hidden = hidden_names_of(policy_now.hidden_columns, policy_now.hidden_tables)
    try:
        llm, model = llm_for(state, target)
        missing: errors.LLMNotConfigured | None = None
    except errors.LLMNotConfigured as exc:
        missing = exc
    # A follow-up's words mean nothing alone, so with an LLM it is the model's to read in context; without
    # one, a follow-up asked exactly as a template's or a verified question is that question (nothing else
    # could answer it).
    standalone = not earlier.prompt or missing is not None
    if standalone:
        offline = _Run(state, q, target, None, None, policy, deadline, None, rules, hidden, semantic)
        # A DBA's template first: its answer is labelled trusted (gateway.pipeline.trusted).
        trusted = await answer_trusted(state, q, policy, on_attempt, offline.check_and_run)
        if trusted is not None:
            return trusted
    if state.settings.store.exact_match_answers and standalone:
        offline = _Run(state, q, target, None, None, policy, deadline, None, rules, hidden, semantic)
        verified = await answer_verified(state, q, policy, on_attempt, offline.check_and_run)
        if verified is not None:
            return verified
    if missing is not None:
        if state.settings.store.exact_match_answers:  # the demo's offline mode: say what does work
            raise await offline_answers_only(state, q, missing) from None
        raise missing
    # The owner's daily tokens, before the LLM is called at all.
    await token_budget.check(state.store, state.settings.llm, q.client)
    # Built from what the caller's role and row policy let it read (gateway.context.scope).
    ctx = await build_context(state, state.settings.context, target, rules, q.question,
                              "\n".join(filter(None, [q.evidence, earlier.topic])), role=q.role, claims=q.claims,
                              semantic=semantic)
    run = _Run(state, q, target, llm, model, policy, deadline, ctx, rules, hidden, semantic)
    guideline = ctx.guideline.text.strip() if ctx.guideline and ctx.guideline.text else ""
    attempts: list[Attempt] = []
    history = attempts  # what reflection sees and the answer is chosen from: with candidates, the chosen one on
    # The SQL tried so far, to stop when a reflection repeats one; normalized only once a reflection needs
    # the comparison (most questions pass at once and never do).
    seen: set[str] = set()
    tried: list[str] = []
    candidates: dict[str, Any] | None = None  # with ask.candidates > 1: their groups and the choice

    async def record(attempt: Attempt) -> None:
        attempts.append(attempt)
        if history is not attempts:
            history.append(attempt)
        log_attempt(q.database, attempt)
        if on_attempt is not None:
            await on_attempt(attempt)

    async def first_draft(n: int, source: Source, drafted: Drafted, began: float) -> Attempt:
        return await _evaluate(run, n, source, drafted, began, guideline_applied=False)

    compiled: Attempt | None = None
    if policy.candidates > 1:
        pick = await first_pass(llm, ctx, q, policy, model=model, deadline=deadline, evaluate=first_draft,
                                on_attempt=on_attempt, on_candidates=on_candidates, earlier=earlier.prompt)
        attempts.extend(pick.attempts)
        attempt, history, candidates = pick.chosen, [pick.chosen], pick.summary
        tried.extend(a.sql for a in attempts if a.sql)
    elif policy.compile_metrics and not earlier.prompt and compiled_path.applies(semantic, q.question):
        compiled = await _compiled(run, llm, model)
        if compiled is not None:
            await record(compiled)
            tried.append(compiled.sql or "")
    if policy.candidates == 1 and compiled is not None and compiled.passed:
        attempt = compiled  # answered from the semantic model: no SQL generation at all
    elif policy.candidates == 1:
        began = time.perf_counter()
        drafted = await generate(llm, ctx, q.question, q.evidence, model=model, temperature=policy.temperature,
                                 deadline=deadline, earlier=earlier.prompt,
                                 clarify=policy.clarifications and earlier.may_clarify)
        if drafted.clarification is not None:  # the model asks the user instead of guessing: nothing runs
            reply = drafted.reply
            await record(Attempt(n=1, source="generation", sql=None, tokens={"prompt": reply.prompt_tokens,
                                 "completion": reply.completion_tokens}, timings={"llm_ms": reply.llm_ms,
                                 "total_ms": (time.perf_counter() - began) * 1000}))
            answer = clarifying_answer(q, attempts[-1], drafted.clarification.masked(hidden),
                                       ctx.guideline.version if ctx.guideline else None)
            state.tally.count(q.database, answer.status, attempts, None)
            return answer
        attempt = await _evaluate(run, len(attempts) + 1, "generation", drafted, began, guideline_applied=False)
        if attempt.sql:
            tried.append(attempt.sql)
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
            drafted = await reflect(llm, ctx, q.question, q.evidence, history, codes,
                                    guideline=guideline if applied else None, policy=policy_now,
                                    model=model, temperature=policy.temperature, deadline=deadline,
                                    earlier=earlier.prompt)
        except (errors.LLMUnavailable, errors.DeadlineExceeded, errors.LLMBadOutput) as exc:
            if all(a.sql is None for a in history):
                raise
            # Keep the trace (and any result) rather than lose it to a failing or slow reflection.
            stop_reason = "time_budget" if isinstance(exc, errors.DeadlineExceeded) else exc.code
            break
        reflections += 1
        key = normalize_sql(drafted.sql) if drafted.sql else None
        seen.update(normalize_sql(text) for text in tried)
        tried.clear()
        if key is not None and key in seen:
            attempt = _repeated(attempts[-1].n + 1, drafted, began, applied)
            _uphold(history, key=key)
            await record(attempt)
            stop_reason = "repeated_sql"
            break
        if key is not None:
            seen.add(key)
        try:
            attempt = await _evaluate(run, attempts[-1].n + 1, "reflection", drafted, began,
                                      guideline_applied=applied)
        except INFRASTRUCTURE as exc:
            if not any(a.ran for a in history):
                raise  # nothing ran: a failed answer would hide the outage; the problem says what happened
            # An earlier attempt ran: answer with it rather than lose it to the deadline or an outage.
            stop_reason = "time_budget" if isinstance(exc, errors.DeadlineExceeded) else exc.code
            break
        if not attempt.passed and attempt.result is not None:
            if _uphold(history, result=attempt.result):
                await record(attempt)
                stop_reason = "same_result"
                break
        await record(attempt)

    if all(a.sql is None for a in attempts):
        state.tally.count(q.database, errors.LLMBadOutput.code, attempts, None)
        raise errors.LLMBadOutput(
            f"none of the LLM's {len(attempts)} answer(s) contained SQL", attempts=[a.as_dict() for a in attempts]
        )
    chosen = choose(history)
    answer = Answer(
        status=status_of(chosen), database=q.database, question=q.question, chosen=chosen, attempts=attempts,
        stop_reason=stop_reason, guideline_version=ctx.guideline.version if ctx.guideline else None,
        guideline_applied=any(a.guideline_applied for a in attempts), request_id=q.request_id,
        candidates=candidates,
    )
    state.tally.count(q.database, answer.status, attempts, chosen, first=history[0])
    return answer


async def ask_template(state: GatewayState, q: Question, template: Template, values: dict[str, str],
                       on_attempt: OnAttempt | None = None) -> Answer:
    """Run ``template`` with checked ``values`` for ``q`` (its caller's role and row policy), as a question
    answered by it would be: the ``POST /v1/templates/{name}/run`` answer."""
    target = state.target(q.database)
    policy = target.settings.ask
    deadline = time.monotonic() + min(policy.time_budget_s, state.settings.server.request_timeout_s)
    rules = state.ruleset(q.database)
    policy_now = state.policy(q.database)
    hidden = hidden_names_of(policy_now.hidden_columns, policy_now.hidden_tables)
    runner = _Run(state, q, target, None, None, policy, deadline, None, rules, hidden)
    return await run_template(state, q, template, values, policy, on_attempt, runner.check_and_run)


async def _compiled(run: _Run, llm: LLMClient, model: str) -> Attempt | None:
    """The metric query the LLM picks, compiled from the semantic model and evaluated as attempt 1; None
    when the question goes to ordinary generation (nothing is recorded then)."""
    began = time.perf_counter()
    picked = await compiled_path.pick(llm, run.semantic, run.q.question, llm_model=model, deadline=run.deadline)
    if picked.compiled is None or picked.query is None:
        log.info("semantic_not_compiled", database=run.q.database, why=picked.why_not)
        return None
    attempt = await _evaluate(run, 1, "semantic_model", Drafted(picked.compiled.sql, picked.reply), began,
                              guideline_applied=False)
    attempt.metric_query = picked.query.model_dump(exclude_defaults=True)
    return attempt


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
        findings, result = await run.check_and_run(drafted.sql, timings)
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


def _uphold(history: list[Attempt], *, key: str | None = None, result: QueryResult | None = None) -> bool:
    """Mark the first earlier attempt that a reflection re-stated (its normalized SQL ``key``, or the same
    ``result``) as upheld, when what was doubted is only how its result looks: the model saw the findings and
    kept its answer, so the answer stands with the doubt recorded rather than ending ``suspicious`` (or being
    replaced)."""
    for earlier in history:
        if not (earlier.triggers and earlier.upholdable):
            continue
        if (key is not None and earlier.sql is not None and normalize_sql(earlier.sql) == key) \
                or (result is not None and _same_result(earlier.result, result)):
            earlier.upheld = True
            return True
    return False


def _same_result(earlier: QueryResult | None, later: QueryResult) -> bool:
    return earlier is not None and [c.name for c in earlier.columns] == [c.name for c in later.columns] \
        and earlier.rows == later.rows and earlier.truncated == later.truncated


def _repeated(n: int, drafted: Drafted, began: float, guideline_applied: bool) -> Attempt:
    reply = drafted.reply
    finding = Finding("repeated_sql", "the reflection returned SQL that was already tried; it was not run again")
    return Attempt(n=n, source="reflection", sql=drafted.sql, findings=[finding], triggers=[],
                   guideline_applied=guideline_applied,
                   tokens={"prompt": reply.prompt_tokens, "completion": reply.completion_tokens},
                   timings={"llm_ms": reply.llm_ms, "check_ms": 0.0, "db_ms": 0.0, "acquire_ms": 0.0,
                            "total_ms": (time.perf_counter() - began) * 1000})


