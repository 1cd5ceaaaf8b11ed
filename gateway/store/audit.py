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
    # Who asked (gateway.ownership): only the owner may give feedback on the answer. None: audited before
    # owners were recorded (store migration 0006), or by in-process code without a principal.
    owner: str | None = None
    end_user: str | None = None
    via: str | None = None


_COLUMNS = ("request_id", "database", "question", "evidence", "attempts", "final_sql", "status", "timings",
            "guideline_version", "owner", "end_user", "via")


async def record(db: Db, entry: AuditEntry) -> bool:
    """Insert the entry; False when its request id is already audited.

    The first answer under an id keeps it. The HTTP API always generates the id it audits under (a client's
    ``X-Request-Id`` is only a correlation id), but in-process callers may pass their own, and a later
    answer must never replace an audited question and SQL that feedback may name.
    """
    status = await db.execute(
        """
        INSERT INTO request_audit (request_id, database, question, evidence, attempts, final_sql, status,
                                   timings, guideline_version, owner, end_user, via)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
        ON CONFLICT (request_id) DO NOTHING
        """,
        *(getattr(entry, column) for column in _COLUMNS),
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
    rows = [{column: getattr(e, column) for column in _COLUMNS} for e in first.values()]
    inserted = {r["request_id"] for r in await db.fetch(
        """
        INSERT INTO request_audit (request_id, database, question, evidence, attempts, final_sql, status,
                                   timings, guideline_version, owner, end_user, via)
        SELECT r.request_id, r.database, r.question, r.evidence, r.attempts, r.final_sql, r.status, r.timings,
               r.guideline_version, r.owner, r.end_user, r.via
        FROM jsonb_to_recordset($1::jsonb) AS r(request_id text, database text, question text, evidence text,
                                               attempts jsonb, final_sql text, status text, timings jsonb,
                                               guideline_version text, owner text, end_user text, via text)
        ON CONFLICT (request_id) DO NOTHING
        RETURNING request_id
        """,
        rows,
    )}
    return [entry.request_id in inserted and first[entry.request_id] is entry for entry in entries]


async def get(db: Db, request_id: str) -> AuditEntry | None:
    """The audited answer under ``request_id``, whoever asked it (for operators and tests)."""
    row = await db.fetchrow("SELECT * FROM request_audit WHERE request_id = $1", request_id)
    return _from_row(row) if row is not None else None


async def get_owned(db: Db, request_id: str, owner: str) -> AuditEntry | None:
    """The audited answer under ``request_id`` when ``owner`` asked it; None otherwise, exactly as for an id
    that was never audited, so that nobody learns whether another owner's id exists."""
    row = await db.fetchrow("SELECT * FROM request_audit WHERE request_id = $1 AND owner = $2", request_id, owner)
    return _from_row(row) if row is not None else None


def _from_row(row: Any) -> AuditEntry:
    return AuditEntry(**{column: row[column] for column in _COLUMNS})


@dataclass(slots=True)
class AuditedAnswer:
    """An audited answer as its history shows it (no rows: the audit keeps none)."""

    entry: AuditEntry
    created_at: Any  # datetime

    def as_dict(self) -> dict[str, Any]:
        e = self.entry
        return {"request_id": e.request_id, "database": e.database, "question": e.question, "status": e.status,
                "sql": e.final_sql, "attempts": e.attempts, "guideline_version": e.guideline_version,
                "created_at": self.created_at.isoformat() if self.created_at is not None else None}


async def owned_recent(db: Db, owner: str, limit: int, databases: list[str] | None) -> list[AuditedAnswer]:
    """``owner``'s latest audited answers, newest first, in ``databases`` only (None: any)."""
    rows = await db.fetch(
        """
        SELECT * FROM request_audit WHERE owner = $1 AND ($2::text[] IS NULL OR database = ANY($2::text[]))
        ORDER BY created_at DESC, request_id LIMIT $3
        """,
        owner, databases, limit,
    )
    return [AuditedAnswer(_from_row(r), r["created_at"]) for r in rows]


async def get_dated(db: Db, request_id: str) -> AuditedAnswer | None:
    """The audited answer under ``request_id`` with when it was given, whoever asked it (the caller decides
    who may see it: gateway.history)."""
    row = await db.fetchrow("SELECT * FROM request_audit WHERE request_id = $1", request_id)
    return AuditedAnswer(_from_row(row), row["created_at"]) if row is not None else None
