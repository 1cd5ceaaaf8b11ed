"""What each finished question and each attempt leave behind for SREs: metrics and one log line per attempt.

The pass-ratio gauges need running totals per database; :class:`Tally` keeps them (one per process,
owned by whoever runs questions, so tests and evaluations can hold their own).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.pipeline.respond import Attempt
from gateway.sql.client import query_hash

log = get_logger(__name__)


@dataclass
class Tally:
    """database -> [questions, first passes, final passes], for the first- and final-pass ratio gauges."""

    totals: dict[str, list[int]] = field(default_factory=dict)

    def count(self, database: str, status: str, attempts: list[Attempt], chosen: Attempt | None, *,
              first: Attempt | None = None) -> None:
        """``first`` is the first pass's answer when it is not ``attempts[0]`` (the chosen one of several
        candidates)."""
        metrics.ASK.labels(database, status).inc()
        metrics.ATTEMPTS.observe(len(attempts))
        head = first if first is not None else (attempts[0] if attempts else None)
        first_passed = head is not None and head.passed
        final = chosen is not None and chosen.passed
        if first_passed:
            metrics.FIRST_PASS.labels(database).inc()
        if final:
            metrics.FINAL_PASS.labels(database).inc()
        tally = self.totals.setdefault(database, [0, 0, 0])
        tally[0] += 1
        tally[1] += first_passed
        tally[2] += final
        metrics.FIRST_PASS_RATIO.labels(database).set(tally[1] / tally[0])
        metrics.FINAL_PASS_RATIO.labels(database).set(tally[2] / tally[0])



def log_attempt(database: str, attempt: Attempt) -> None:
    t = attempt.timings
    log.info("ask_attempt", database=database, n=attempt.n, source=attempt.source,
             query_hash=query_hash(attempt.sql) if attempt.sql else None, codes=attempt.codes,
             triggers=attempt.triggers, passed=attempt.passed, guideline_applied=attempt.guideline_applied,
             rows=attempt.result.row_count if attempt.result else None,
             llm_ms=round(t.get("llm_ms", 0.0), 3), check_ms=round(t.get("check_ms", 0.0), 3),
             db_ms=round(t.get("db_ms", 0.0), 3), total_ms=round(t.get("total_ms", 0.0), 3),
             prompt_tokens=attempt.tokens["prompt"], completion_tokens=attempt.tokens["completion"])
