"""``eval --collect-corrections``: every wrong answer of a training run becomes a correction in the store.

This is the first step of the MAGIC experiment: the corrections (question, the gateway's wrong SQL, the gold
SQL) are what ``guideline regenerate`` learns a guideline from, which is then evaluated on a development set.

A correction is stored with source ``dba`` and ``verified`` true (gold SQL is the evaluator's, a trusted
answer), and with ``request_id`` ``eval:<run id>:<question id>`` so its provenance stays visible. The same
wrong SQL for the same question is stored once even when several scenarios produced it, and the run
folder remembers what it stored, so running the command again adds nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.eval.questions import Question
from gateway.eval.runfolder import RunFolder
from gateway.service import Gateway

__all__ = ["CollectSummary", "collect_corrections", "incorrect_sql_of"]


@dataclass
class CollectSummary:
    stored: int = 0
    already: int = 0            # stored by an earlier collection from this run
    duplicates: int = 0         # same question and wrong SQL as another scenario's
    without_sql: int = 0        # wrong, but no SQL to learn from (the LLM never wrote any)
    correction_ids: list[int] = field(default_factory=list)


def incorrect_sql_of(record: dict[str, Any]) -> str | None:
    """The SQL a wrong answer stands on: the chosen SQL, else the last SQL in its trace."""
    if record.get("sql"):
        return str(record["sql"])
    for attempt in reversed(record.get("trace") or []):
        if attempt.get("sql"):
            return str(attempt["sql"])
    return None


async def collect_corrections(gateway: Gateway, folder: RunFolder, questions: Iterable[Question],
                              scenarios: Iterable[str] | None = None) -> CollectSummary:
    """Store the failures recorded in ``folder`` (only ``scenarios``' when given) as corrections."""
    by_id = {q.id: q for q in questions}
    wanted = set(scenarios) if scenarios is not None else None
    done = folder.collected()
    seen: set[tuple[str, str]] = set()
    summary = CollectSummary()
    for record in sorted(folder.results(), key=lambda r: (r["id"], r["scenario"])):
        if record.get("correct") or record.get("status") == "gold_error" or record["id"] not in by_id:
            continue
        if wanted is not None and record["scenario"] not in wanted:
            continue
        sql = incorrect_sql_of(record)
        if sql is None:
            summary.without_sql += 1
            continue
        key = (record["id"], Gateway.statement_key(sql))
        if key in seen:
            summary.duplicates += 1
            continue
        seen.add(key)
        if (record["scenario"], record["id"]) in done:
            summary.already += 1
            continue
        q = by_id[record["id"]]
        correction_id = await gateway.add_dba_correction(
            q.database, q.question, evidence=q.evidence or "", incorrect_sql=sql, corrected_sql=q.gold_sql[0],
            request_id=f"eval:{folder.run_id}:{q.id}",
        )
        folder.record_collected({"scenario": record["scenario"], "id": q.id, "correction_id": correction_id})
        summary.stored += 1
        summary.correction_ids.append(correction_id)
    return summary
