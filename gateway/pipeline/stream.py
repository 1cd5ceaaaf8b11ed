"""The SSE bridge for ``POST /v1/ask`` with ``stream``: attempts as they are validated, then the answer.

With ``ask.candidates`` > 1 a ``candidates`` event (the groups, their sizes and how one was chosen) follows
the candidates' attempts, before any reflection's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from gateway.pipeline.conversation import Thread, ask
from gateway.pipeline.ports import Asking
from gateway.pipeline.question import Question
from gateway.pipeline.respond import Answer, Attempt


async def ask_events(state: Asking, q: Question, answers: list[Answer],
                     thread: Thread | None = None) -> AsyncIterator[tuple[str, Any]]:
    """``("attempt", attempt)`` as each attempt is validated (and ``("candidates", summary)`` once candidates are
    chosen among), then ``("answer", answer)`` (with its ``conversation_id``); the answer is also appended to
    ``answers``. ``thread``: the conversation, when the caller opened it already. Errors raise after the
    events already produced; closing the iterator (a client that went away) cancels the question."""
    queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()

    async def on_attempt(attempt: Attempt) -> None:
        queue.put_nowait(("attempt", attempt.as_dict()))

    async def on_candidates(summary: dict[str, Any]) -> None:
        queue.put_nowait(("candidates", summary))

    task = asyncio.create_task(ask(state, q, on_attempt, thread, on_candidates=on_candidates))
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (item := await queue.get()) is not None:
            yield item
        answer = task.result()
        answers.append(answer)
        yield "answer", answer.as_dict()
    finally:
        if not task.done():
            task.cancel()
