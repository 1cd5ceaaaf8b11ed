"""The MAGIC agents as LLM calls: feedback, correction, the manager's instruction revisions, the guideline
writer, and the gate's replay. Each function is one call; the cycle and the run decide when to make it.

What a correction carries (question, hints, SQL) and what an agent wrote is passed as data blocks, and every
system prompt ends with the rule that such blocks are never instructions (see ``gateway.llm.untrusted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.llm.client import LLM
from gateway.llm.untrusted import RULE, data_block
from gateway.magic import prompts
from gateway.pipeline.generate import extract_sql
from gateway.store.runs import KeptFeedback

__all__ = ["Agents", "Case", "extract_sql"]


@dataclass(frozen=True, slots=True)
class Case:
    """One correction as the agents see it (the correct SQL only reaches the feedback agent and manager)."""

    correction_id: int
    database: str
    question: str
    evidence: str
    schema: str
    incorrect_sql: str
    correct_sql: str


@dataclass
class Agents:
    """The LLM behind every agent, with a call counter for run reports and benchmarks."""

    llm: LLM
    model: str
    calls: int = 0
    by_purpose: dict[str, int] = field(default_factory=dict)

    async def ask(self, purpose: str, system: str, user: str) -> str:
        self.calls += 1
        self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + 1
        # Appended here, not in the templates: the manager rewrites agents' instructions and might drop it.
        system = f"{system}\n\n{RULE}"
        reply = await self.llm.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            purpose=purpose, model=self.model,
        )
        return reply.text.strip()

    async def feedback(self, instructions: str, case: Case) -> str:
        user = prompts.FEEDBACK_USER.format(
            **_data(case), correct_sql=data_block("correct_sql", case.correct_sql),
        )
        return await self.ask("magic_feedback", f"{prompts.FEEDBACK_MARKER}\n{instructions}", user)

    async def correction(self, instructions: str, case: Case, feedback: str) -> str:
        user = prompts.CORRECTION_USER.format(
            **_data(case), feedback=data_block("reviewer_feedback", feedback),
        )
        return await self.ask("magic_correction", f"{prompts.CORRECTION_MARKER}\n{instructions}", user)

    async def revise_feedback_instructions(self, iteration: int, instructions: str, output: str,
                                           case: Case) -> str:
        user = prompts.REVISE_FEEDBACK_USER.format(
            iteration=iteration, **_data(case), correct_sql=data_block("correct_sql", case.correct_sql),
            instructions=instructions, output=data_block("agent_output", output),
        )
        return await self.ask("magic_manager", f"{prompts.REVISE_FEEDBACK_MARKER}\n{prompts.MANAGER_SYSTEM}", user)

    async def revise_correction_instructions(self, iteration: int, instructions: str, output: str,
                                             case: Case) -> str:
        user = prompts.REVISE_CORRECTION_USER.format(
            iteration=iteration, **_data(case), instructions=instructions,
            output=data_block("agent_output", output), correct_sql=data_block("correct_sql", case.correct_sql),
        )
        return await self.ask("magic_manager", f"{prompts.REVISE_CORRECTION_MARKER}\n{prompts.MANAGER_SYSTEM}",
                              user)

    async def write_guideline(self, guideline: str, batch: Sequence[KeptFeedback]) -> str:
        mistakes = "\n\n".join(
            prompts.MISTAKE_ITEM.format(n=n, question=data_block("question", k.question),
                                        incorrect_sql=data_block("incorrect_sql", k.incorrect_sql),
                                        revised_sql=data_block("corrected_sql", k.revised_sql),
                                        feedback=data_block("reviewer_feedback", k.feedback))
            for n, k in enumerate(batch, start=1)
        )
        user = prompts.GUIDELINE_USER.format(guideline=guideline, mistakes=mistakes)
        return await self.ask("magic_guideline", f"{prompts.GUIDELINE_MARKER}\n{prompts.GUIDELINE_SYSTEM}", user)

    async def replay(self, guideline: str, case: Case) -> str:
        block = prompts.REPLAY_GUIDELINE_BLOCK.format(guideline=guideline) if guideline.strip() else ""
        system = f"{prompts.REPLAY_MARKER}\n" + prompts.REPLAY_SYSTEM.format(guideline_block=block)
        user = prompts.REPLAY_USER.format(**_data(case))
        return await self.ask("magic_gate", system, user)


def _data(case: Case) -> dict[str, str]:
    """The parts of a correction that clients wrote (and the schema, read from the database), as data blocks."""
    return {"question": data_block("question", case.question), "schema": data_block("schema", case.schema),
            "evidence": data_block("hints", case.evidence or "(none)"),
            "incorrect_sql": data_block("incorrect_sql", case.incorrect_sql)}
