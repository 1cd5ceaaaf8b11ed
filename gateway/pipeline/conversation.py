"""Conversations: a follow-up question ("and by month?", "only 2024") sees the turns before it.

A question with a client (``Question.client``, its owner: the end user, else the API key, else the
``X-Client-Id`` with auth off; see :mod:`gateway.ownership`) and no ``conversation_id`` starts a
conversation; the answer carries its new id (128 random bits). A question that names one continues it, but
only when that owner started it, on the same database, within ``store.conversation_retention_days``: any
other id answers ``unknown_conversation`` (404), the same for an id that never existed, so another owner's
turns (another end user's behind the same frontend, too) can be neither read (through a follow-up's prompt)
nor added to.

What a follow-up carries (:func:`render`): the earlier turns' questions, their SQL and the shape of their
results (columns and row count, never rows), or the clarifying question the gateway asked and its options,
latest turns first within the database's ``ask.conversation_token_budget``, as one data block (text users
and the model wrote is data, never instructions: ``gateway.untrusted``). Hidden tables and columns are masked
in every turn, when it is stored and again when it is shown (rules can change in between). Only SQL that
ran is kept: a blocked attempt's SQL, which may name hidden columns, never is.

Turns live in the store; without one (no ``store.dsn``) a question starts no conversation (its answer has
``conversation_id: null``) and one that names a conversation answers ``store_not_configured``. A turn that
cannot be stored (the store is down) costs its conversation that turn, never the answer; a new conversation
whose first turn was not stored is not offered (``conversation_id: null``).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from typing import Any

from gateway import errors
from gateway.masking import hidden_names_of, mask
from gateway.observability.logging import get_logger
from gateway.pipeline import loop, prompts, token_budget
from gateway.pipeline.candidates import OnCandidates
from gateway.pipeline.question import NO_EARLIER, Earlier, Question
from gateway.pipeline.respond import Answer
from gateway.pipeline.verified import OnAttempt
from gateway.state import GatewayState
from gateway.store import conversations
from gateway.store.conversations import StoredConversation, StoredTurn
from gateway.store.pool import store_faults
from gateway.untrusted import data_block

log = get_logger(__name__)

RECORD_TIMEOUT_S = 2.0
CHARS_PER_TOKEN = 4  # the estimate the context budget uses too
ANSWERED = ("ok", "suspicious")  # statuses whose SQL ran and is worth carrying


@dataclass(slots=True)
class Thread:
    """The conversation a question belongs to, with its earlier turns (none for a new one)."""

    conversation: StoredConversation
    turns: list[StoredTurn]
    new: bool

    @property
    def id(self) -> str:
        return self.conversation.id

    @property
    def just_asked(self) -> bool:
        """The latest turn was a clarifying question: this question is the user's reply."""
        return bool(self.turns) and self.turns[-1].clarification is not None


def new_id() -> str:
    return "c_" + secrets.token_urlsafe(16)


async def open_thread(state: GatewayState, q: Question) -> Thread | None:
    """The question's conversation: a new one, the client's earlier one, or None when it has none.

    Raises ``unknown_conversation``, ``conversation_database_mismatch``, ``store_not_configured`` or
    ``store_unavailable``; adapters call it before they start answering, so a stream never opens for these.
    """
    if q.client is None:
        return None
    store = state.store
    if q.conversation_id is None:
        if store is None:
            return None
        return Thread(StoredConversation(new_id(), q.client, q.database, q.end_user, q.via), [], new=True)
    if store is None:
        raise errors.StoreNotConfigured("conversation_id needs the store: conversations are kept in store.dsn")
    retention = state.settings.store.conversation_retention_days
    with store_faults("the conversation could not be read; ask again later"):
        found = await conversations.get(store.pool, q.conversation_id, q.client, retention)
        if found is None:
            raise errors.UnknownConversation(
                f"no conversation {q.conversation_id!r} of this client (they expire "
                f"{retention:g} days after their latest turn); leave conversation_id out to start one",
                conversation_id=q.conversation_id)
        if found.database != q.database:
            raise errors.ConversationDatabaseMismatch(
                f"conversation {found.id!r} is on database {found.database!r}; a conversation stays on one "
                "database", conversation_database=found.database)
        turns = await conversations.turns(store.pool, found.id)
    return Thread(found, turns, new=False)


async def ask(state: GatewayState, q: Question, on_attempt: OnAttempt | None = None,
              thread: Thread | None = None, *, on_candidates: OnCandidates | None = None) -> Answer:
    """Answer ``q`` within its conversation (opened here unless the caller opened it) and record the turn."""
    if thread is None:
        thread = await open_thread(state, q)
    if thread is None:
        answer = await loop.ask(state, q, on_attempt, on_candidates)
        await token_budget.charge(state.store, state.settings.llm, q.client, answer.attempts)
        return answer
    answer = await loop.ask(state, q, on_attempt, on_candidates, earlier=earlier_of(state, thread))
    await token_budget.charge(state.store, state.settings.llm, q.client, answer.attempts)
    answer.conversation_id = thread.id
    if not await record(state, thread, q, answer) and thread.new:
        answer.conversation_id = None  # nothing to continue: do not hand out an id that answers 404
    return answer


def replying(q: Question, asked: str, clarification: dict[str, Any], evidence: str | None = None) -> Thread:
    """A conversation held only in memory whose one turn is the clarifying question the gateway asked about
    ``asked``: ``q``, the user's reply, is answered with it in view (and gets SQL, not another question).

    For a client that answers a clarification at once (MCP elicitation) when no stored conversation holds that
    turn (no store, or its first turn was not recorded). With a store, the reply's answer starts a stored
    conversation of its own.
    """
    turn = StoredTurn(n=1, request_id=None, question=asked, status="needs_clarification", evidence=evidence or "",
                      clarification={"question": str(clarification.get("question", "")),
                                     "options": [str(o) for o in clarification.get("options") or []]})
    return Thread(StoredConversation(new_id(), q.client or "", q.database, q.end_user, q.via), [turn], new=True)


def earlier_of(state: GatewayState, thread: Thread) -> Earlier:
    if not thread.turns:
        return NO_EARLIER
    names = _hidden(state, thread.conversation.database)
    budget = state.target(thread.conversation.database).settings.ask.conversation_token_budget
    prompt = render(thread.turns, budget, names)
    shown = thread.turns[-3:]  # what the schema is pruned for: the latest few are what a follow-up refers to
    topic = "\n".join(mask(f"{t.question}\n{t.sql or ''}", names) for t in shown) if prompt else ""
    return Earlier(prompt=prompt, topic=topic, may_clarify=not thread.just_asked)


def render(turns: list[StoredTurn], budget_tokens: int, hidden: list[str]) -> str:
    """The earlier turns as the prompts show them: latest first into the budget, then in order.

    The latest turn is always shown (cut to the budget when it alone exceeds it): it is what a follow-up
    refers to.
    """
    if not turns or budget_tokens <= 0:
        return ""
    budget = budget_tokens * CHARS_PER_TOKEN
    shown: list[str] = []
    used = 0
    for turn in reversed(turns):
        text = turn_text(turn, hidden)
        if used + len(text) > budget:
            if shown:
                break
            text = text[: max(budget - 3, 0)] + "..."
        shown.append(text)
        used += len(text)
    left_out = len(turns) - len(shown)
    body = "\n\n".join(reversed(shown))
    if left_out:
        body = f"({left_out} earlier turn(s) left out)\n\n{body}"
    return f"## Earlier turns of this conversation\n{data_block('conversation', body)}\n{prompts.CONVERSATION_NOTE}"


def turn_text(turn: StoredTurn, hidden: list[str]) -> str:
    lines = [f"Turn {turn.n}", f"Question: {turn.question}"]
    if turn.evidence:
        lines.append(f"Evidence: {turn.evidence}")
    if turn.clarification:
        lines.append(f"The gateway asked the user: {turn.clarification.get('question', '')}")
        options = turn.clarification.get("options") or []
        if options:
            lines.append("Options offered: " + "; ".join(str(o) for o in options))
    elif turn.sql and turn.status in ANSWERED:
        columns = ", ".join(f"{c.get('name')} ({c.get('type')})" for c in turn.columns)
        more = " or more" if turn.truncated else ""
        lines += [f"SQL:\n{turn.sql}", f"Result: {turn.row_count}{more} row(s); columns: {columns or '(none)'}"]
    else:
        lines.append(f"Result: {turn.status}; no SQL ran successfully")
    return mask("\n".join(lines), hidden)


async def record(state: GatewayState, thread: Thread, q: Question, answer: Answer) -> bool:
    """Store the answer as the conversation's next turn (masked); False when the store did not take it."""
    store = state.store
    if store is None:
        return False
    names = _hidden(state, q.database)
    chosen = answer.chosen
    result = chosen.result if chosen is not None and answer.status in ANSWERED else None
    turn = StoredTurn(
        n=0, request_id=answer.request_id, question=mask(q.question, names), evidence=mask(q.evidence or "", names),
        status=answer.status, sql=mask(chosen.sql, names) if result is not None and chosen and chosen.sql else None,
        columns=[{"name": mask(c.name, names), "type": c.type} for c in result.columns] if result else [],
        row_count=result.row_count if result else None, truncated=result.truncated if result else False,
        clarification=answer.clarification.masked(names).as_dict() if answer.clarification else None,
    )
    try:
        async with asyncio.timeout(RECORD_TIMEOUT_S):
            if thread.new:  # with concurrent new conversations in one statement; then expired ones purged
                turn.n = await conversations.add_first_turn(store, thread.conversation, turn,
                                                            state.settings.store.conversation_retention_days)
            else:
                async with store.transaction() as conn:
                    turn.n = await conversations.add_turn(conn, thread.conversation, turn)
    except Exception as exc:  # noqa: BLE001 - the answer matters more than its place in the conversation
        log.warning("conversation_turn_not_recorded", conversation_id=thread.id, request_id=answer.request_id,
                    error=repr(exc))
        return turn.n > 0
    thread.turns.append(turn)
    return True


def _hidden(state: GatewayState, database: str) -> list[str]:
    policy = state.policy(database)
    return hidden_names_of(policy.hidden_columns, policy.hidden_tables)
