"""The MAGIC agents as LLM calls: feedback, correction, the manager's instruction revisions, the guideline
writer, and the gate's replay. Each function is one call; the cycle and the run decide when to make it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.generate import extract_sql
from gateway.llm import LLMClient
from gateway.magic import prompts
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

    llm: LLMClient
    model: str
    calls: int = 0
    by_purpose: dict[str, int] = field(default_factory=dict)

    async def ask(self, purpose: str, system: str, user: str) -> str:
        self.calls += 1
        self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + 1
        reply = await self.llm.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            purpose=purpose, model=self.model,
        )
        return reply.text.strip()

    async def feedback(self, instructions: str, case: Case) -> str:
        user = prompts.FEEDBACK_USER.format(
            question=case.question, evidence=case.evidence or "(none)", schema=case.schema,
            correct_sql=case.correct_sql, incorrect_sql=case.incorrect_sql,
        )
        return await self.ask("magic_feedback", f"{prompts.FEEDBACK_MARKER}\n{instructions}", user)

    async def correction(self, instructions: str, case: Case, feedback: str) -> str:
        user = prompts.CORRECTION_USER.format(
            question=case.question, evidence=case.evidence or "(none)", schema=case.schema,
            incorrect_sql=case.incorrect_sql, feedback=feedback,
        )
        return await self.ask("magic_correction", f"{prompts.CORRECTION_MARKER}\n{instructions}", user)

    async def revise_feedback_instructions(self, iteration: int, instructions: str, output: str,
                                           case: Case) -> str:
        user = prompts.REVISE_FEEDBACK_USER.format(
            iteration=iteration, question=case.question, incorrect_sql=case.incorrect_sql,
            correct_sql=case.correct_sql, instructions=instructions, output=output,
        )
        return await self.ask("magic_manager", f"{prompts.REVISE_FEEDBACK_MARKER}\n{prompts.MANAGER_SYSTEM}", user)

    async def revise_correction_instructions(self, iteration: int, instructions: str, output: str,
                                             case: Case) -> str:
        user = prompts.REVISE_CORRECTION_USER.format(
            iteration=iteration, question=case.question, incorrect_sql=case.incorrect_sql,
            instructions=instructions, output=output, correct_sql=case.correct_sql,
        )
        return await self.ask("magic_manager", f"{prompts.REVISE_CORRECTION_MARKER}\n{prompts.MANAGER_SYSTEM}",
                              user)

    async def write_guideline(self, guideline: str, batch: Sequence[KeptFeedback]) -> str:
        mistakes = "\n\n".join(
            prompts.MISTAKE_ITEM.format(n=n, question=k.question, incorrect_sql=k.incorrect_sql,
                                        revised_sql=k.revised_sql, feedback=k.feedback)
            for n, k in enumerate(batch, start=1)
        )
        user = prompts.GUIDELINE_USER.format(guideline=guideline, mistakes=mistakes)
        return await self.ask("magic_guideline", f"{prompts.GUIDELINE_MARKER}\n{prompts.GUIDELINE_SYSTEM}", user)

    async def replay(self, guideline: str, case: Case) -> str:
        block = prompts.REPLAY_GUIDELINE_BLOCK.format(guideline=guideline) if guideline.strip() else ""
        system = f"{prompts.REPLAY_MARKER}\n" + prompts.REPLAY_SYSTEM.format(guideline_block=block)
        user = prompts.REPLAY_USER.format(question=case.question, evidence=case.evidence or "(none)",
                                          schema=case.schema, incorrect_sql=case.incorrect_sql)
        return await self.ask("magic_gate", system, user)
