"""The real question pipeline, opened the way the server opens it, and run under a scenario.

The gateway's resources (target pools, LLM client, rules, schema cache ...) are opened by the same
:class:`~gateway.service.Gateway` that ``serve`` opens, so an evaluation exercises exactly what it would.
A question is answered by :func:`gateway.pipeline.ask` directly (no HTTP, no audit, no corrections
sink): evaluating must not write corrections or audit rows as a side effect.

A scenario is applied the way a DBA would configure it, not through a side door: each question is asked
against a *view* of the state that shares every resource (pools, LLM client, caches) and differs in two
things only, the database's ask policy (when to reflect, where the guideline applies) and the guideline
source, which always answers the scenario's guideline. Scenarios therefore run side by side in one process.
Under ``gold_first`` the view's LLM client also answers the generation call itself, with the question's
gold SQL (:class:`GoldFirst`); reflections and the judge still go to the configured model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from gateway.context.model import Guideline
from gateway.context.sources import FileGuidelineSource
from gateway.eval.questions import Question
from gateway.eval.scenarios import Scenario, ask_policy
from gateway.execute import Targets
from gateway.llm import LLMClient, LLMReply
from gateway.pipeline import Question as AskQuestion
from gateway.pipeline import ask
from gateway.pipeline.respond import Answer
from gateway.service import Gateway
from gateway.settings import Settings
from gateway.state import GatewayState
from gateway.store import Store
from gateway.store import guidelines as stored_guidelines

__all__ = ["NO_GUIDELINE", "EvalSetupError", "FixedGuideline", "GoldFirst", "answer", "open_gateway", "open_store",
           "preflight", "resolve_guideline", "scenario_state"]

NO_GUIDELINE = Guideline("none", "")


class EvalSetupError(RuntimeError):
    """The evaluation cannot start: the message says which setting or argument to change."""


@asynccontextmanager
async def open_gateway(settings: Settings) -> AsyncIterator[GatewayState]:
    """The resources a serving gateway would have (a :class:`~gateway.service.Gateway`), for the block."""
    async with Gateway(settings) as gateway:
        yield gateway.state


async def preflight(state: GatewayState, questions: Sequence[Question]) -> None:
    """Before the first question: every database the questions use answers, and the LLM is usable.

    Raises :class:`EvalSetupError` naming the setting to change, so a run never scores a table of errors.
    """
    if not questions:
        raise EvalSetupError("the question set is empty")
    configured = ", ".join(sorted(state.targets.by_name)) or "none"
    for database in sorted({q.database for q in questions}):
        target = state.targets.get(database)
        if target is None:
            hint = (" (start `nl2sql-gateway demo` and export the NL2SQL_CONFIG it prints)"
                    if database == "demo" else f" (add [databases.{database}] with its dsn to the config)")
            raise EvalSetupError(f"the questions use database {database!r}, which is not configured; "
                                 f"configured: {configured}{hint}")
        answer = await target.ping(timeout=5.0)
        if answer != "ok":
            raise EvalSetupError(f"database {database!r} {answer}")
        model = target.settings.ask.model or state.settings.llm.model
        if not model:
            raise EvalSetupError(f"no LLM model for {database!r}: set llm.model (NL2SQL_LLM__MODEL)")
    if state.llm is None:
        raise EvalSetupError("no LLM endpoint configured: set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL "
                             "(any OpenAI-compatible server) and NL2SQL_LLM__MODEL")
    problem = await state.llm.unreachable()
    if problem:
        raise EvalSetupError(problem)


@asynccontextmanager
async def open_store(settings: Settings) -> AsyncIterator[Store]:
    if not settings.store.dsn:
        raise EvalSetupError("this needs the feedback store: set store.dsn (NL2SQL_STORE__DSN)")
    store = await Store.open(settings.store)
    try:
        yield store
    finally:
        await store.close()


async def resolve_guideline(settings: Settings, store: Store | None, database: str, choice: str) -> Guideline:
    """The guideline text a scenario's choice (``none``, ``default``, ``vN``) stands for on ``database``."""
    if choice == "none":
        return NO_GUIDELINE
    if choice == "default":
        guideline = await FileGuidelineSource(settings.guidelines_dir).active(database)
        if not guideline.text:
            raise EvalSetupError(
                f"no guideline file for {database!r} in {settings.guidelines_dir} (default.md or "
                f"{database}.md); set guidelines_dir or drop the 'default' guideline from the scenarios"
            )
        return guideline
    version = int(choice.removeprefix("v"))
    if store is None:
        raise EvalSetupError(f"guideline {choice} lives in the feedback store: set store.dsn")
    stored = await stored_guidelines.get(store.pool, version)
    if stored is None:
        raise EvalSetupError(f"the store has no guideline version {version} (see `nl2sql-gateway guideline list`)")
    return Guideline(choice, stored.text)


class FixedGuideline:
    """A guideline source that always answers one guideline (the scenario's)."""

    def __init__(self, guideline: Guideline) -> None:
        self.guideline = guideline

    async def active(self, database: str) -> Guideline:
        return self.guideline


class GoldFirst(LLMClient):
    """The configured client, except that generation answers ``gold_sql`` at once (no call, no tokens).

    The loop then checks, runs and validates the gold SQL exactly as it would the model's first draft, so a
    finding, a reflection or a ``suspicious`` status on it is a false alarm of validation.
    """

    def __init__(self, inner: LLMClient, gold_sql: str) -> None:  # shares the inner client's bounds and breaker
        super().__init__(inner.settings, inner.pools)
        self.inner, self.gold_sql = inner, gold_sql

    async def complete(self, messages: list[dict[str, str]], *, purpose: str, model: str,
                       temperature: float | None = None, deadline: float | None = None,
                       response_format: dict[str, Any] | None = None) -> LLMReply:
        if purpose == "generate":
            return LLMReply(text=f"<sql>{self.gold_sql}</sql>", prompt_tokens=0, completion_tokens=0, llm_ms=0.0,
                            model="gold")
        return await self.inner.complete(messages, purpose=purpose, model=model, temperature=temperature,
                                         deadline=deadline, response_format=response_format)


def scenario_state(state: GatewayState, database: str, scenario: Scenario, guideline: Guideline) -> GatewayState:
    """``state`` as if ``database`` were configured with the scenario's ask policy and guideline."""
    target = state.target(database)
    settings = target.settings.model_copy(update={"ask": ask_policy(target.settings.ask, scenario)})
    targets = Targets(by_name={**state.targets.by_name, database: replace(target, settings=settings)})
    return replace(state, targets=targets, guidelines=FixedGuideline(guideline))


async def answer(state: GatewayState, question: Question, scenario: Scenario, guideline: Guideline) -> Answer:
    """Answer one question with the scenario's reflection policy and guideline."""
    view = scenario_state(state, question.database, scenario, guideline)
    if scenario.reflection == "gold_first" and view.llm is not None:
        view = replace(view, llm=GoldFirst(view.llm, question.gold_sql[0]))
    request = AskQuestion(database=question.database, question=question.question, evidence=question.evidence,
                          max_rows=view.target(question.database).settings.limits.max_rows)
    return await ask(view, request)
