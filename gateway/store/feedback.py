"""User feedback on answers: one row per (request, client)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gateway.store.pool import Db


@dataclass(slots=True)
class StoredFeedback:
    id: int
    request_id: str
    client_id: str
    verdict: str
    corrected_sql: str | None
    note: str | None
    correction_id: int | None
    example_id: int | None
    created_at: datetime
    example_status: str | None = None  # the example's review state (proposed / approved / rejected)


def _from_row(row: object) -> StoredFeedback:
    r = dict(row)  # type: ignore[call-overload]
    return StoredFeedback(
        id=r["id"], request_id=r["request_id"], client_id=r["client_id"], verdict=r["verdict"],
        corrected_sql=r["corrected_sql"], note=r["note"], correction_id=r["correction_id"],
        example_id=r["example_id"], created_at=r["created_at"], example_status=r.get("example_status"),
    )


async def get(db: Db, request_id: str, client_id: str) -> StoredFeedback | None:
    row = await db.fetchrow(
        "SELECT f.*, e.status AS example_status FROM feedback f LEFT JOIN verified_examples e "
        "ON e.id = f.example_id WHERE f.request_id = $1 AND f.client_id = $2", request_id, client_id,
    )
    return _from_row(row) if row else None


async def insert(
    db: Db, *, request_id: str, client_id: str, verdict: str, corrected_sql: str | None, note: str | None,
    correction_id: int | None, example_id: int | None, end_user: str | None = None, via: str | None = None,
) -> StoredFeedback | None:
    """Insert the feedback; None when this client already gave feedback on this request.

    ``client_id`` is the owner (gateway.auth.ownership); ``end_user`` and ``via`` say who and through what."""
    row = await db.fetchrow(
        """
        INSERT INTO feedback (request_id, client_id, verdict, corrected_sql, note, correction_id, example_id,
                              end_user, via)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (request_id, client_id) DO NOTHING
        RETURNING *
        """,
        request_id, client_id, verdict, corrected_sql, note, correction_id, example_id, end_user, via,
    )
    return _from_row(row) if row else None


async def accuracy_by_database(db: Db) -> dict[str, tuple[int, int]]:
    """(correct, total) verdicts per database, for the accuracy gauge."""
    rows = await db.fetch(
        """
        SELECT a.database, count(*) FILTER (WHERE f.verdict = 'correct') AS correct, count(*) AS total
        FROM feedback f JOIN request_audit a USING (request_id) GROUP BY a.database
        """
    )
    return {r["database"]: (int(r["correct"]), int(r["total"])) for r in rows}
