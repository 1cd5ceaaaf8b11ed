"""Regeneration runs and the successful feedbacks they keep (MAGIC's memory between runs)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from gateway.store.pool import Db

# Key of the session advisory lock that elects the one replica allowed to regenerate at a time.
REGENERATION_LOCK_KEY = 7_460_201_002


@dataclass(frozen=True, slots=True)
class KeptFeedback:
    id: int
    correction_id: int
    question: str
    incorrect_sql: str
    revised_sql: str
    feedback: str


async def start(db: Db, trigger: str, database: str | None = None) -> int:
    return int(await db.fetchval("INSERT INTO regeneration_runs (trigger, database) VALUES ($1, $2) RETURNING id",
                                 trigger, database))


async def finish(db: Db, run_id: int, *, outcome: str, counts: dict[str, int], version: int | None,
                 error: str | None = None) -> None:
    await db.execute(
        """
        UPDATE regeneration_runs SET finished_at = now(), outcome = $2, corrections_processed = $3,
            feedbacks_kept = $4, guideline_updates = $5, llm_calls = $6, version = $7, error = $8
        WHERE id = $1
        """,
        run_id, outcome, counts.get("corrections_processed", 0), counts.get("feedbacks_kept", 0),
        counts.get("guideline_updates", 0), counts.get("llm_calls", 0), version, error,
    )


async def last_finished_at(db: Db) -> datetime | None:
    value = await db.fetchval("SELECT max(finished_at) FROM regeneration_runs")
    return value  # type: ignore[no-any-return]


async def recent(db: Db, limit: int = 20) -> list[dict[str, Any]]:
    rows = await db.fetch("SELECT * FROM regeneration_runs ORDER BY id DESC LIMIT $1", limit)
    return [dict(r) for r in rows]


async def keep_feedback(conn: Db, *, correction_id: int, run_id: int, feedback: str, revised_sql: str,
                        iterations: int) -> None:
    await conn.execute(
        """
        INSERT INTO magic_feedbacks (correction_id, run_id, feedback, revised_sql, iterations)
        VALUES ($1, $2, $3, $4, $5) ON CONFLICT (correction_id) DO NOTHING
        """,
        correction_id, run_id, feedback, revised_sql, iterations,
    )


async def unused_feedbacks(db: Db, database: str | None = None) -> list[KeptFeedback]:
    """Kept feedbacks not yet folded into a guideline (only those of ``database``'s corrections when given),
    in correction order (deterministic batches even when corrections are worked on concurrently)."""
    rows = await db.fetch(
        """
        SELECT m.id, m.correction_id, c.question, c.incorrect_sql, m.revised_sql, m.feedback
        FROM magic_feedbacks m JOIN corrections c ON c.id = m.correction_id
        WHERE m.used_in_version IS NULL AND c.outcome IS DISTINCT FROM 'rejected'  -- a DBA rejected it
              AND ($1::text IS NULL OR c.database = $1)
        ORDER BY m.correction_id
        """,
        database,
    )
    return [KeptFeedback(r["id"], r["correction_id"], r["question"], r["incorrect_sql"], r["revised_sql"],
                         r["feedback"]) for r in rows]


async def mark_used(conn: asyncpg.Connection, feedback_ids: list[int], version: int) -> None:
    await conn.execute(
        "UPDATE magic_feedbacks SET used_in_version = $2 WHERE id = ANY($1::bigint[])", feedback_ids, version,
    )


async def try_lock(conn: asyncpg.Connection) -> bool:
    """Take the regeneration lock on this session if nobody holds it; never waits."""
    return bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", REGENERATION_LOCK_KEY))


async def unlock(conn: asyncpg.Connection) -> None:
    await conn.execute("SELECT pg_advisory_unlock($1)", REGENERATION_LOCK_KEY)
