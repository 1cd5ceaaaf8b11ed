"""Starter questions: what a database is known to answer well, offered to an analyst before the first
question (the console's Ask page, ``GET /v1/databases/{name}/starters``).

Built from a chain of sources, each an async function returning :class:`Starter` items: the trusted templates
the caller may use (each in its first example question with its defaults), then the verified (approved)
questions; both answer without an LLM. Duplicates (same question, case and spacing aside) keep the first
source's entry.
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
    source: str  # "template" (a trusted template) or "verified" (an approved example)

    def as_dict(self) -> dict[str, str]:
        return {"question": self.question, "source": self.source}


Source = Callable[[GatewayState, str, int, str | None], Awaitable[list[Starter]]]  # ..., role


async def template_starters(state: GatewayState, database: str, limit: int, role: str | None) -> list[Starter]:
    """The templates ``role`` may use that have a default for every parameter, asked with those defaults."""
    from gateway.pipeline.trusted import domain, templates_of

    try:
        found = await templates_of(state, database)
    except Exception as exc:  # noqa: BLE001 - starters are a courtesy; the question box works without them
        log.warning("starters_unavailable", database=database, error=str(exc))
        return []
    found = [t for t in found if all(p.default is not None for p in t.parameters)]
    if not found:
        return []
    dom = await domain(state, database, role, ())  # callers with claims get no starters at all (below)
    # A default of a column whose rows depend on the reader may spell a row this caller cannot read: such a
    # template is no starter (as the templates' listing shows it no default).
    return [Starter(t.question({p.name: p.default or "" for p in t.parameters}), "template")
            for t in found if dom.available(t) and all(dom.shows_default(p.column) for p in t.parameters)][:limit]


async def verified_starters(state: GatewayState, database: str, limit: int, role: str | None) -> list[Starter]:
    """The database's verified questions, oldest first, whose SQL reads only what ``role`` may read and no
    table whose rows depend on the reader (a stored question's words may spell another tenant's values, as
    the few-shot examples' rule in :mod:`gateway.context.build` says); none without a store."""
    if state.store is None:
        return []
    from gateway.pipeline.trusted import domain
    from gateway.store import examples

    try:
        found = await examples.approved_pairs(state.store.pool, database, limit * 4)
    except Exception as exc:  # noqa: BLE001 - starters are a courtesy; the question box works without them
        log.warning("starters_unavailable", database=database, error=str(exc))
        return []
    if not found:
        return []
    dom = await domain(state, database, role, ())
    return [Starter(question, "verified") for question, sql in found if dom.reads_shared_only(sql)][:limit]


SOURCES: tuple[Source, ...] = (template_starters, verified_starters)


async def starter_questions(state: GatewayState, database: str, *, role: str | None = None,
                            claims: tuple[tuple[str, str], ...] = (), limit: int = STARTERS_SHOWN,
                            sources: tuple[Source, ...] = SOURCES) -> list[Starter]:
    """Up to ``limit`` starters for ``database``, from ``sources`` in order, as the Postgres ``role`` may read.

    A caller under a row policy (``claims``) gets none: stored questions are everyone's, and their words may
    name another tenant's values (as in :func:`gateway.pipeline.verified.offline_answers_only`)."""
    if claims:
        return []
    out: list[Starter] = []
    seen: set[str] = set()
    for source in sources:
        try:
            found = await source(state, database, limit, role)
        except errors.GatewayError as exc:
            log.warning("starters_source_failed", database=database, code=exc.code)
            continue
        for starter in found:
            key = question_key(starter.question)
            if key not in seen and len(out) < limit:
                seen.add(key)
                out.append(starter)
    return out
