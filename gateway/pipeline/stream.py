"""The SSE bridge for ``POST /v1/ask`` with ``stream``: attempts as they are validated, then the answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from gateway.pipeline.conversation import Thread, ask
from gateway.pipeline.question import Question
from gateway.pipeline.respond import Answer, Attempt
from gateway.state import GatewayState


async def ask_events(state: GatewayState, q: Question, answers: list[Answer],
                     thread: Thread | None = None) -> AsyncIterator[tuple[str, Any]]:
    """``("attempt", attempt)`` as each attempt is validated, then ``("answer", answer)`` (with its
    ``conversation_id``); the answer is also appended to ``answers``. ``thread``: the conversation, when the
    caller opened it already. Errors raise after the attempts already produced; closing the iterator (a client
    that went away) cancels the question."""
    queue: asyncio.Queue[Attempt | None] = asyncio.Queue()

    async def on_attempt(attempt: Attempt) -> None:
        queue.put_nowait(attempt)

    task = asyncio.create_task(ask(state, q, on_attempt, thread))
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
