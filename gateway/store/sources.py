"""The store behind the question pipeline's protocols: the active guideline, verified examples, corrections.

- :class:`StoreGuidelines` (a ``GuidelineSource``): the database's active stored version, else the global
  active version, else the fallback source (the guideline files). Cached per database for ``ttl_s`` so a
  question does not cost a store round trip; an activation on this replica invalidates the cache at once,
  on other replicas within ``ttl_s``.
  When the store is down, questions go on with the last known guideline (or the fallback).
- :class:`StoreExamples` (an ``ExamplesSource``): trigram-similar approved pairs, and exact matches, each
  only while the database's current policy still allows its SQL (``allowed``; rules change after approval).
- :class:`StoreCorrections` (a ``CorrectionsSink``): reflection chains become corrections (unverified until
  a user confirms the answer, see ``gateway.learning.feedback``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.context.model import Example, Guideline
from gateway.context.sources import GuidelineSource
from gateway.learning.corrections import Correction
from gateway.observability.logging import get_logger
from gateway.store import corrections, examples, guidelines
from gateway.store.pool import Store

log = get_logger(__name__)

VERIFIED_SOURCES = frozenset({"user", "dba"})


def version_label(version: int) -> str:
    """How a stored version is named in answers and audit rows (file guidelines use other labels)."""
    return f"v{version}"


class StoreGuidelines:
    """Per database: its own active version, else the global active one, else the fallback (the files)."""

    def __init__(self, store: Store, fallback: GuidelineSource, ttl_s: float = 2.0) -> None:
        self.store = store
        self.fallback = fallback
        self.ttl_s = ttl_s
        self._cached: dict[str, tuple[float, Guideline | None]] = {}

    def invalidate(self) -> None:
        self._cached = {}

    async def active(self, database: str) -> Guideline:
        now = time.monotonic()
        cached = self._cached.get(database)
        if cached is None or now - cached[0] > self.ttl_s:
            try:
                version = await guidelines.in_force(self.store.pool, database)
                cached = (now, Guideline(version_label(version.version), version.text) if version else None)
                self._cached[database] = cached
            except Exception as exc:  # noqa: BLE001 - a question must not fail because the store blinked
                log.warning("guideline_store_unavailable", error=repr(exc))
                if cached is None:
                    return await self.fallback.active(database)
        stored = cached[1]
        return stored if stored is not None else await self.fallback.active(database)

    async def global_active(self, database: str) -> Guideline:
        """What ``database`` would use without a version of its own: the global version, else the files
        (the baseline a global candidate is measured against). Not cached: only the gate asks."""
        version = await guidelines.active(self.store.pool, None)
        if version is not None:
            return Guideline(version_label(version.version), version.text)
        return await self.fallback.active(database)


class StoreExamples:
    async def similar(self, database: str, question: str, k: int) -> list[Example]:
        try:
            # A few more than asked for, so that pairs the current policy refuses do not leave gaps.
            found = await examples.similar(self.store.pool, database, question, 2 * k)
        except Exception as exc:  # noqa: BLE001 - examples help; their absence must not fail a question
            log.warning("examples_store_unavailable", error=repr(exc))
            return []
        return [Example(e.question, e.sql) for e in found if self._allowed(database, e.sql)][:k]

    async def exact(self, database: str, question: str) -> Example | None:
        """A verified pair for the very same question (see ``store.exact_match_answers``)."""
        try:
            found = await examples.exact(self.store.pool, database, question)
        except Exception as exc:  # noqa: BLE001 - fall back to asking the LLM
            log.warning("examples_store_unavailable", error=repr(exc))
            return None
        if found is None or not self._allowed(database, found.sql):
            return None
        return Example(found.question, found.sql)

    def __init__(self, store: Store, allowed: Callable[[str, str], bool] | None = None) -> None:
        self.store = store
        self.allowed = allowed

    def _allowed(self, database: str, sql: str) -> bool:
        ok = self.allowed is None or self.allowed(database, sql)
        if not ok:
            log.info("example_refused_by_policy", database=database)
        return ok


class StoreCorrections:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def record(self, correction: Correction) -> None:
        await corrections.add(
            self.store.pool, database=correction.database, question=correction.question,
            evidence=correction.evidence or "", incorrect_sql=correction.incorrect_sql,
            corrected_sql=correction.corrected_sql,
            source=correction.source if correction.source in {"reflection", "user", "dba"} else "reflection",  # type: ignore[arg-type]
            verified=correction.source in VERIFIED_SOURCES, request_id=correction.request_id,
            owner=correction.owner, end_user=correction.end_user, via=correction.via,
        )
