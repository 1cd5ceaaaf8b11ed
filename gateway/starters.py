"""Starter questions: what a database is known to answer well, offered to an analyst before the first
question (the console's Ask page, ``GET /v1/databases/{name}/starters``).

Built from a chain of sources, each an async function returning :class:`Starter` items; today the verified
(approved) questions, which also answer without an LLM. Another source (trusted templates, say) is one more
function in :data:`SOURCES`. Duplicates (same question, case and spacing aside) keep the first source's entry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway import errors
from gateway.observability.logging import get_logger
from gateway.state import GatewayState
from gateway.store.examples import question_key

log = get_logger(__name__)

STARTERS_SHOWN = 8


@dataclass(frozen=True)
class Starter:
    question: str
    source: str  # "verified" (an approved example); later sources name themselves

    def as_dict(self) -> dict[str, str]:
        return {"question": self.question, "source": self.source}


Source = Callable[[GatewayState, str, int], Awaitable[list[Starter]]]


async def verified_starters(state: GatewayState, database: str, limit: int) -> list[Starter]:
    """The database's verified questions, oldest first; none without a store."""
    if state.store is None:
        return []
    from gateway.store import examples

    try:
        found = await examples.questions(state.store.pool, database, limit)
    except Exception as exc:  # noqa: BLE001 - starters are a courtesy; the question box works without them
        log.warning("starters_unavailable", database=database, error=str(exc))
        return []
    return [Starter(q, "verified") for q in found]


SOURCES: tuple[Source, ...] = (verified_starters,)


async def starter_questions(state: GatewayState, database: str, *, claims: tuple[tuple[str, str], ...] = (),
                            limit: int = STARTERS_SHOWN, sources: tuple[Source, ...] = SOURCES) -> list[Starter]:
    """Up to ``limit`` starters for ``database``, from ``sources`` in order.

    A caller under a row policy (``claims``) gets none: stored questions are everyone's, and their words may
    name another tenant's values (as in :func:`gateway.pipeline.verified.offline_answers_only`)."""
    if claims:
        return []
    out: list[Starter] = []
    seen: set[str] = set()
    for source in sources:
        try:
            found = await source(state, database, limit)
        except errors.GatewayError as exc:
            log.warning("starters_source_failed", database=database, code=exc.code)
            continue
        for starter in found:
            key = question_key(starter.question)
            if key not in seen and len(out) < limit:
                seen.add(key)
                out.append(starter)
    return out
