"""Corrections: chains in which a later attempt fixed an earlier one, handed to a sink.

The question pipeline produces them; the feedback store persists them (MAGIC learns its guideline from
them). The default sink keeps the most recent ones in memory, so a gateway without a store still works.
A sink that fails never costs the client its answer: :func:`hand_over` runs after the answer is computed
and only logs errors.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gateway.observability.logging import get_logger

log = get_logger(__name__)
SINK_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class Correction:
    question: str
    evidence: str | None
    database: str
    incorrect_sql: str
    corrected_sql: str
    findings: list[dict[str, Any]] = field(default_factory=list)  # what was wrong with the incorrect SQL
    request_id: str | None = None
    source: str = "reflection"
    # Who asked the question the correction came from (gateway.auth.ownership), recorded with it.
    owner: str | None = None
    end_user: str | None = None
    via: str | None = None


@runtime_checkable
class CorrectionsSink(Protocol):
    async def record(self, correction: Correction) -> None: ...


class MemoryCorrections:
    """Keeps the last ``size`` corrections (for tests, the demo, and gateways without a store)."""

    def __init__(self, size: int = 1000) -> None:
        self.items: deque[Correction] = deque(maxlen=size)

    async def record(self, correction: Correction) -> None:
        self.items.append(correction)


async def hand_over(sink: CorrectionsSink, corrections: Iterable[Correction]) -> int:
    """Record each correction; returns how many were accepted. Errors are logged, never raised."""
    accepted = 0
    for correction in corrections:
        try:
            async with asyncio.timeout(SINK_TIMEOUT_S):
                await sink.record(correction)
            accepted += 1
        except Exception as exc:  # noqa: BLE001 - the answer is already out; losing a correction is logged
            log.warning("correction_not_recorded", database=correction.database, error=repr(exc),
                        request_id=correction.request_id)
    return accepted
