"""Corrections: a wrong SQL and the SQL that fixed it, from reflection, a user or a DBA.

MAGIC reads the unprocessed ones and marks each with what it made of it (see the migration's comment).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from gateway.store.pool import Db

Source = Literal["reflection", "user", "dba"]
Outcome = Literal["success", "exhausted", "holdout", "unusable", "rejected"]


@dataclass(slots=True)
class StoredCorrection:
    id: int
    database: str
    question: str
    evidence: str
    incorrect_sql: str
    corrected_sql: str
    source: str
    verified: bool
    request_id: str | None
    outcome: str | None
    created_at: datetime


async def add(
    db: Db, *, database: str, question: str, incorrect_sql: str, corrected_sql: str, source: Source,
    verified: bool, evidence: str = "", request_id: str | None = None, reviewed_by: str | None = None,
    owner: str | None = None, end_user: str | None = None, via: str | None = None,
) -> int:
    """Store a correction. It counts as reviewed when ``reviewed_by`` names a dba/admin, or when a DBA wrote
    it (source ``dba``); MAGIC never activates a guideline built from unreviewed ones on its own."""
    if source == "dba" and reviewed_by is None:
        reviewed_by = "dba"
    return int(await db.fetchval(
        """
        INSERT INTO corrections (request_id, database, question, evidence, incorrect_sql, corrected_sql,
                                 source, verified, reviewed_by, reviewed_at, owner, end_user, via)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $9::text IS NULL THEN NULL ELSE now() END,
                $10, $11, $12)
        RETURNING id
        """,
        request_id, database, question, evidence or "", incorrect_sql, corrected_sql, source, verified,
        reviewed_by, owner, end_user, via,
    ))


async def unreviewed(db: Db, ids: list[int]) -> list[int]:
    """Those of ``ids`` that no dba or admin stood behind (see :func:`add`), in id order."""
    rows = await db.fetch(
        "SELECT id FROM corrections WHERE id = ANY($1::bigint[]) AND reviewed_at IS NULL ORDER BY id", ids,
    )
    return [int(r["id"]) for r in rows]


def _from_row(row: object) -> StoredCorrection:
    r = dict(row)  # type: ignore[call-overload]
    return StoredCorrection(
        id=r["id"], database=r["database"], question=r["question"], evidence=r["evidence"],
        incorrect_sql=r["incorrect_sql"], corrected_sql=r["corrected_sql"], source=r["source"],
        verified=r["verified"], request_id=r["request_id"], outcome=r["outcome"], created_at=r["created_at"],
    )


async def pending(db: Db, *, verified_only: bool, limit: int, database: str | None = None) -> list[StoredCorrection]:
    """Unprocessed corrections (only ``database``'s when given), oldest first."""
    rows = await db.fetch(
        """
        SELECT * FROM corrections
        WHERE processed_at IS NULL AND (verified OR NOT $1) AND ($3::text IS NULL OR database = $3)
        ORDER BY id LIMIT $2
        """,
        verified_only, limit, database,
    )
    return [_from_row(r) for r in rows]


async def count_pending(db: Db, *, verified_only: bool) -> int:
    return int(await db.fetchval(
        "SELECT count(*) FROM corrections WHERE processed_at IS NULL AND (verified OR NOT $1)", verified_only,
    ))


async def holdout(db: Db, *, limit: int, database: str | None = None) -> list[StoredCorrection]:
    """The most recent corrections kept apart for the activation gate (MAGIC never saw them); only
    ``database``'s when given."""
    rows = await db.fetch(
        "SELECT * FROM corrections WHERE outcome = 'holdout' AND ($2::text IS NULL OR database = $2) "
        "ORDER BY id DESC LIMIT $1", limit, database,
    )
    return [_from_row(r) for r in rows]


async def mark_processed(db: Db, correction_id: int, outcome: Outcome) -> None:
    # A DBA's rejection (gateway.store.examples.review) wins over a run that was still working on it.
    await db.execute(
        "UPDATE corrections SET processed_at = now(), outcome = $2 WHERE id = $1 "
        "AND outcome IS DISTINCT FROM 'rejected'", correction_id, outcome,
    )


async def verify_for_request(db: Db, request_id: str, final_sql: str) -> int:
    """A user confirmed a request's final SQL: corrections that produced it become verified."""
    result = await db.execute(
        "UPDATE corrections SET verified = true WHERE request_id = $1 AND corrected_sql = $2 AND NOT verified",
        request_id, final_sql,
    )
    return int(result.split()[-1])
