"""The real question pipeline, opened the way the server opens it, and run under a scenario.

The gateway's resources (target pools, LLM client, rules, schema cache ...) are opened by the same
:class:`~gateway.service.Gateway` that ``serve`` opens, so an evaluation exercises exactly what it would.
A question is answered by :meth:`Gateway.trial <gateway.service.Gateway.trial>` (no HTTP, no audit, no
corrections sink): evaluating must not write corrections or audit rows as a side effect.

A scenario is applied the way a DBA would configure it, not through a side door: each question is asked
under a trial configuration that shares every resource (pools, LLM client, caches) and differs in two
things only, the database's ask policy (when to reflect, where the guideline applies) and the guideline,
which is always the scenario's. Scenarios therefore run side by side in one process.
Under ``gold_first`` the trial's LLM client also answers the generation call itself, with the question's
gold SQL (:class:`GoldFirst`); reflections and the judge still go to the configured model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from gateway import errors
from gateway.context.model import Guideline
from gateway.context.sources import FileGuidelineSource
from gateway.eval.questions import Question
from gateway.eval.scenarios import Scenario, ask_policy
from gateway.llm.client import LLMClient, LLMReply
from gateway.service import Gateway
from gateway.settings import Settings

if TYPE_CHECKING:  # the type of Gateway.trial's result
    from gateway.service import Answer

__all__ = ["NO_GUIDELINE", "EvalSetupError", "GoldFirst", "answer", "open_gateway", "preflight", "resolve_guideline"]

NO_GUIDELINE = Guideline("none", "")


class EvalSetupError(RuntimeError):
    """The evaluation cannot start: the message says which setting or argument to change."""


@asynccontextmanager
async def open_gateway(settings: Settings) -> AsyncIterator[Gateway]:
    """The gateway ``serve`` would open (its feedback store too, when ``store.dsn`` is set), for the block."""
    async with Gateway(settings) as gateway:
        yield gateway


async def preflight(gateway: Gateway, questions: Sequence[Question]) -> None:
    """Before the first question: every database the questions use answers, and the LLM is usable.

    Raises :class:`EvalSetupError` naming the setting to change, so a run never scores a table of errors.
    """
    if not questions:
        raise EvalSetupError("the question set is empty")
    settings = gateway.settings
    configured = ", ".join(sorted(settings.databases)) or "none"
    for database in sorted({q.database for q in questions}):
        db = settings.database(database)
        if db is None:
            hint = (" (start `nl2sql-gateway demo` and export the NL2SQL_CONFIG it prints)"
                    if database == "demo" else f" (add [databases.{database}] with its dsn to the config)")
            raise EvalSetupError(f"the questions use database {database!r}, which is not configured; "
                                 f"configured: {configured}{hint}")
        answer = await gateway.ping(database, timeout=5.0)
        if answer != "ok":
            raise EvalSetupError(f"database {database!r} {answer}")
        model = db.ask.model or settings.llm.model
        if not model:
            raise EvalSetupError(f"no LLM model for {database!r}: set llm.model (NL2SQL_LLM__MODEL)")
    problem = await gateway.llm_problem()
    if problem:
        raise EvalSetupError(problem)


async def resolve_guideline(gateway: Gateway, database: str, choice: str) -> Guideline:
    """The guideline text a scenario's choice (``none``, ``default``, ``vN``) stands for on ``database``."""
    settings = gateway.settings
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
    if not settings.store.dsn:
        raise EvalSetupError(f"guideline {choice} lives in the feedback store: set store.dsn")
    try:
        stored = await gateway.guideline(version)
    except errors.UnknownGuidelineVersion:
        raise EvalSetupError(f"the store has no guideline version {version} (see `nl2sql-gateway guideline list`)"
                             ) from None
    return Guideline(choice, stored.text)


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


async def answer(gateway: Gateway, question: Question, scenario: Scenario, guideline: Guideline) -> Answer:
    """Answer one question with the scenario's reflection policy and guideline."""
    db = gateway.settings.databases.get(question.database)
    policy = ask_policy(db.ask, scenario) if db is not None else None  # None: the trial answers unknown_database
    gold = question.gold_sql[0]
    wrap = (lambda inner: GoldFirst(inner, gold)) if scenario.reflection == "gold_first" else None
    return await gateway.trial(question.database, question.question, evidence=question.evidence,
                               ask_policy=policy, guideline=guideline, llm=wrap)
