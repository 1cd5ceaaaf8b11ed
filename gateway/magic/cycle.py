"""The feedback-correction cycle for one correction, run by the manager (MAGIC, section 3.1).

Each iteration: the feedback agent explains the mistakes of the incorrect SQL against the correct one; the
correction agent, which never sees the correct SQL, revises the incorrect SQL from that feedback; the manager
checks the revision with the safety check, runs it on the target database and compares its result with the
correct SQL's by execution equivalence. On failure the manager rewrites both agents' instructions from
their last outputs and tries again, up to ``max_iterations``. A successful feedback is what MAGIC keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gateway import errors, safety
from gateway.execute import QueryResult, run_query
from gateway.magic import prompts
from gateway.magic.agents import Agents, Case, extract_sql
from gateway.observability.logging import get_logger
from gateway.pipeline.ports import Asking
from gateway.sql.equivalence import gold_is_ordered, same_result

log = get_logger(__name__)


@dataclass(slots=True)
class Executed:
    """What running one SQL gave: a result, or why there is none."""

    result: QueryResult | None = None
    problem: str | None = None


@dataclass(slots=True)
class CycleResult:
    outcome: Literal["success", "exhausted"]
    iterations: int
    feedback: str = ""
    revised_sql: str = ""
    # The instructions in force at the end, for logs and for tests of the manager's revisions.
    feedback_instructions: str = ""
    correction_instructions: str = ""
    trace: list[dict[str, str | None]] = field(default_factory=list)


async def execute_checked(state: Asking, database: str, sql: str) -> Executed:
    """Run ``sql`` the way the gateway runs anything: safety check first, then guarded execution."""
    verdict = safety.check(sql, state.policy(database))
    if not verdict.allowed:
        return Executed(problem="blocked: " + ", ".join(verdict.codes))
    try:
        return Executed(result=await run_query(state.target(database), sql))
    except errors.DatabaseUnavailable:
        raise  # not the SQL's fault: the run stops and the correction stays pending
    except errors.GatewayError as exc:
        return Executed(problem=f"{exc.code}: {exc.detail}")


def equivalent(gold: QueryResult, gold_sql: str, pred: QueryResult) -> bool:
    """Same multiset of rows (order only when the gold orders), column names ignored."""
    if gold.truncated != pred.truncated:
        return False
    return same_result([c.name for c in gold.columns], gold.rows, [c.name for c in pred.columns], pred.rows,
                       ordered=gold_is_ordered(gold_sql))


def leaks(text: str, sql: str) -> bool:
    """True when ``text`` carries ``sql`` verbatim (ignoring case and spacing): the correction agent must
    reach the answer from feedback, not be handed it."""
    flat = " ".join(sql.casefold().split()).rstrip(";")
    return bool(flat) and flat in " ".join(text.casefold().split())


async def run_cycle(state: Asking, agents: Agents, case: Case, gold: QueryResult,
                    max_iterations: int) -> CycleResult:
    feedback_instructions = prompts.FEEDBACK_INSTRUCTIONS
    correction_instructions = prompts.CORRECTION_INSTRUCTIONS
    trace: list[dict[str, str | None]] = []
    for iteration in range(1, max_iterations + 1):
        feedback = await agents.feedback(feedback_instructions, case)
        if leaks(feedback, case.correct_sql):
            answer, revised = feedback, None
            problem: str | None = "feedback quoted the correct SQL"
        else:
            answer = await agents.correction(correction_instructions, case, feedback)
            revised = extract_sql(answer)
            problem = None if revised else "no SQL in the correction agent's answer"
            if revised is not None:
                executed = await execute_checked(state, case.database, revised)
                if executed.result is None:
                    problem = executed.problem
                elif not equivalent(gold, case.correct_sql, executed.result):
                    problem = "result differs from the correct SQL's"
        trace.append({"iteration": str(iteration), "revised_sql": revised, "problem": problem})
        if problem is None and revised is not None:
            return CycleResult("success", iteration, feedback, revised, feedback_instructions,
                               correction_instructions, trace)
        log.info("magic_iteration_failed", correction_id=case.correction_id, iteration=iteration, problem=problem)
        if iteration == max_iterations:
            break
        new_feedback = await agents.revise_feedback_instructions(iteration, feedback_instructions, feedback, case)
        new_correction = await agents.revise_correction_instructions(iteration, correction_instructions, answer, case)
        feedback_instructions = _usable(new_feedback, feedback_instructions, None)
        # The manager saw the correct SQL while revising; instructions that spell it out are refused.
        correction_instructions = _usable(new_correction, correction_instructions, case.correct_sql)
    return CycleResult("exhausted", max_iterations, feedback_instructions=feedback_instructions,
                       correction_instructions=correction_instructions, trace=trace)


def _usable(revised: str, previous: str, secret: str | None) -> str:
    text = revised.strip()
    if not text or (secret is not None and leaks(text, secret)):
        if text:
            log.warning("magic_instructions_leaked_answer")
        return previous
    return text
