"""Request audit: one row per question the gateway answered, so feedback can refer to it later."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.store.pool import Db


@dataclass(slots=True)
class AuditEntry:
    request_id: str
    database: str
    question: str
    status: str
    evidence: str = ""
    attempts: list[dict[str, Any]] = field(default_factory=list)
    final_sql: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    guideline_version: str | None = None


async def record(db: Db, entry: AuditEntry) -> bool:
    """Insert the entry; False when its request id is already audited.

    The first answer under an id keeps it: a client may choose its request id (``X-Request-Id``, for trace
    propagation), so letting a later request overwrite the row would let one client replace another's
    audited question and SQL, which that client's feedback (and a dba's approval) would then apply to.
    """
    status = await db.execute(
        """
        INSERT INTO request_audit (request_id, database, question, evidence, attempts, final_sql, status,
                                   timings, guideline_version)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (request_id) DO NOTHING
        """,
        entry.request_id, entry.database, entry.question, entry.evidence, entry.attempts, entry.final_sql,
        entry.status, entry.timings, entry.guideline_version,
    )
    return str(status).endswith(" 1")


async def get(db: Db, request_id: str) -> AuditEntry | None:
    row = await db.fetchrow("SELECT * FROM request_audit WHERE request_id = $1", request_id)
    if row is None:
        return None
    return AuditEntry(
        request_id=row["request_id"], database=row["database"], question=row["question"], status=row["status"],
        evidence=row["evidence"], attempts=row["attempts"], final_sql=row["final_sql"], timings=row["timings"],
        guideline_version=row["guideline_version"],
    )
