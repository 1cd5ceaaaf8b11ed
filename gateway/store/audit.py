"""Request audit: one row per question the gateway answered, so feedback can refer to it later."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.store.batch import Batcher
from gateway.store.pool import Db, Store


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


async def record_batched(store: Store, entry: AuditEntry) -> bool:
    """:func:`record`, written together with the entries of concurrent requests (``gateway.store.batch``):
    returns once the batch holding ``entry`` committed; False when its request id is already audited."""
    batcher = store.batchers.get("audit")
    if batcher is None:
        batcher = store.batchers["audit"] = Batcher(lambda entries: record_many(store.pool, entries),
                                                    lambda one: record(store.pool, one))
    inserted: bool = await batcher.submit(entry)
    return inserted


async def record_many(db: Db, entries: list[AuditEntry]) -> list[bool]:
    """Insert the entries in one statement; per entry, False when its request id is already audited.

    Within the batch too the first entry under an id keeps it (the later ones are not written), as if the
    entries had been recorded one after another.
    """
    first: dict[str, AuditEntry] = {}
    for entry in entries:
        first.setdefault(entry.request_id, entry)
    rows = [{"request_id": e.request_id, "database": e.database, "question": e.question, "evidence": e.evidence,
             "attempts": e.attempts, "final_sql": e.final_sql, "status": e.status, "timings": e.timings,
             "guideline_version": e.guideline_version} for e in first.values()]
    inserted = {r["request_id"] for r in await db.fetch(
        """
        INSERT INTO request_audit (request_id, database, question, evidence, attempts, final_sql, status,
                                   timings, guideline_version)
        SELECT r.request_id, r.database, r.question, r.evidence, r.attempts, r.final_sql, r.status, r.timings,
               r.guideline_version
        FROM jsonb_to_recordset($1::jsonb) AS r(request_id text, database text, question text, evidence text,
                                               attempts jsonb, final_sql text, status text, timings jsonb,
                                               guideline_version text)
        ON CONFLICT (request_id) DO NOTHING
        RETURNING request_id
        """,
        rows,
    )}
    return [entry.request_id in inserted and first[entry.request_id] is entry for entry in entries]


async def get(db: Db, request_id: str) -> AuditEntry | None:
    row = await db.fetchrow("SELECT * FROM request_audit WHERE request_id = $1", request_id)
    if row is None:
        return None
    return AuditEntry(
        request_id=row["request_id"], database=row["database"], question=row["question"], status=row["status"],
        evidence=row["evidence"], attempts=row["attempts"], final_sql=row["final_sql"], timings=row["timings"],
        guideline_version=row["guideline_version"],
    )
