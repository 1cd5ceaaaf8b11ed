"""Guideline versions: candidate -> active -> retired, with provenance and evaluation, per scope.

A version belongs to one database or, with ``database`` NULL, to every database (global). The guideline in
force for database X is X's active version, else the global active version, else the shipped guideline file
(``guidelines_dir``, "version 0"): :func:`in_force` answers the first two, the file source the last.
:func:`reset` retires a scope's active version so that what lies beneath it is in force again.

Writing a candidate and activating a version are each one transaction, so a regeneration run that dies
half-way leaves no half-written version and never touches the active one. Unique partial indexes keep at
most one version active per scope even when two replicas activate at the same moment. Every change of the
active version is recorded in ``guideline_events`` in the same transaction (who, when, from what to what).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import asyncpg

from gateway.store.pool import Db

Status = Literal["candidate", "active", "retired"]
Action = Literal["activate", "rollback", "reset"]
ACTIVATION_LOCK_KEY = 7_460_201_003
SHIPPED = 0  # the version number of the shipped guideline file


@dataclass(slots=True)
class GuidelineVersion:
    version: int
    parent: int | None
    text: str
    status: str
    provenance: dict[str, Any]
    evaluation: dict[str, Any] | None
    created_at: datetime
    activated_at: datetime | None = None
    corrections: list[int] = field(default_factory=list)
    database: str | None = None  # None: global

    def summary(self) -> dict[str, Any]:
        return {
            "version": self.version, "parent": self.parent, "status": self.status, "database": self.database,
            "created_at": self.created_at.isoformat(),
            "activated_at": self.activated_at.isoformat() if self.activated_at else None,
            "corrections": len(self.provenance.get("corrections", [])),
            "evaluation_passed": (self.evaluation or {}).get("passed"),
        }

    def as_dict(self) -> dict[str, Any]:
        return {**self.summary(), "text": self.text, "provenance": self.provenance, "evaluation": self.evaluation}


@dataclass(frozen=True, slots=True)
class GuidelineEvent:
    id: int
    database: str | None
    action: str
    version: int | None
    previous: int | None
    actor: str
    detail: dict[str, Any]
    created_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "database": self.database, "action": self.action, "version": self.version,
                "previous": self.previous, "actor": self.actor, "detail": self.detail,
                "created_at": self.created_at.isoformat()}


def _from_row(row: asyncpg.Record) -> GuidelineVersion:
    return GuidelineVersion(
        version=row["version"], parent=row["parent"], text=row["text"], status=row["status"],
        provenance=row["provenance"] or {}, evaluation=row["evaluation"], created_at=row["created_at"],
        activated_at=row["activated_at"], database=row["database"],
    )


async def add_candidate(conn: asyncpg.Connection, *, text: str, parent: int | None,
                        provenance: dict[str, Any], database: str | None = None) -> int:
    return int(await conn.fetchval(
        "INSERT INTO guideline_versions (parent, text, status, provenance, database) "
        "VALUES ($1, $2, 'candidate', $3, $4) RETURNING version",
        parent, text, provenance, database,
    ))


async def get(db: Db, version: int) -> GuidelineVersion | None:
    row = await db.fetchrow("SELECT * FROM guideline_versions WHERE version = $1", version)
    return _from_row(row) if row else None


async def active(db: Db, database: str | None = None) -> GuidelineVersion | None:
    """The active version *of the scope*: ``database``'s own, or the global one when None."""
    row = await db.fetchrow(
        "SELECT * FROM guideline_versions WHERE status = 'active' AND database IS NOT DISTINCT FROM $1", database,
    )
    return _from_row(row) if row else None


async def in_force(db: Db, database: str) -> GuidelineVersion | None:
    """The stored version ``database``'s questions use: its own active one, else the global one; None when
    the shipped file is in force."""
    row = await db.fetchrow(
        """
        SELECT * FROM guideline_versions
        WHERE status = 'active' AND (database = $1 OR database IS NULL)
        ORDER BY database NULLS LAST LIMIT 1
        """,
        database,
    )
    return _from_row(row) if row else None


async def active_by_database(db: Db) -> dict[str, int]:
    """Each database that has an active version of its own, with that version."""
    rows = await db.fetch(
        "SELECT database, version FROM guideline_versions WHERE status = 'active' AND database IS NOT NULL")
    return {r["database"]: r["version"] for r in rows}


async def list_all(db: Db, *, database: str | None = None, only_global: bool = False) -> list[GuidelineVersion]:
    """Every version; only ``database``'s own with ``database``, only global ones with ``only_global``."""
    rows = await db.fetch(
        """
        SELECT * FROM guideline_versions
        WHERE ($1::text IS NULL OR database = $1) AND (NOT $2 OR database IS NULL)
        ORDER BY version
        """,
        database, only_global,
    )
    return [_from_row(r) for r in rows]


async def set_evaluation(db: Db, version: int, evaluation: dict[str, Any]) -> None:
    await db.execute("UPDATE guideline_versions SET evaluation = $2 WHERE version = $1", version, evaluation)


async def _record(conn: asyncpg.Connection, database: str | None, action: Action, version: int | None,
                  previous: int | None, actor: str, detail: dict[str, Any] | None) -> None:
    await conn.execute(
        "INSERT INTO guideline_events (database, action, version, previous, actor, detail) "
        "VALUES ($1, $2, $3, $4, $5, $6)",
        database, action, version, previous, actor, detail or {},
    )


async def activate(db: asyncpg.Pool, version: int, *, action: Action = "activate", actor: str = "unknown",
                   detail: dict[str, Any] | None = None) -> GuidelineVersion | None:
    """Make ``version`` the only active one of its scope, in one transaction with its event; None when it
    does not exist."""
    async with db.acquire() as conn, conn.transaction():
        # Concurrent activations (two replicas, a DBA and the scheduler) queue here instead of racing into
        # the one-active indexes.
        await conn.execute("SELECT pg_advisory_xact_lock($1)", ACTIVATION_LOCK_KEY)
        target = await conn.fetchrow("SELECT * FROM guideline_versions WHERE version = $1", version)
        if target is None:
            return None
        if target["status"] != "active":
            scope = target["database"]
            previous = await conn.fetchval(
                "UPDATE guideline_versions SET status = 'retired' "
                "WHERE status = 'active' AND database IS NOT DISTINCT FROM $1 RETURNING version", scope,
            )
            target = await conn.fetchrow(
                "UPDATE guideline_versions SET status = 'active', activated_at = now() WHERE version = $1 "
                "RETURNING *", version,
            )
            await _record(conn, scope, action, version, previous, actor, detail)
    # The row as this activation left it: read after the lock is gone, a racing activation may already have
    # retired it again.
    return _from_row(target)


async def reset(db: asyncpg.Pool, database: str | None = None, *, actor: str = "unknown",
                detail: dict[str, Any] | None = None) -> GuidelineVersion | None:
    """Retire the scope's active version, so that what lies beneath is in force again: for a database the
    global version (or the shipped file), globally the shipped file. Recorded as a ``reset`` event even when
    nothing was active (the request is what is audited). Returns the version retired, if any."""
    async with db.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", ACTIVATION_LOCK_KEY)
        row = await conn.fetchrow(
            "UPDATE guideline_versions SET status = 'retired' "
            "WHERE status = 'active' AND database IS NOT DISTINCT FROM $1 RETURNING *", database,
        )
        await _record(conn, database, "reset", None, row["version"] if row else None, actor, detail)
    return _from_row(row) if row else None


async def activate_shipped(db: asyncpg.Pool) -> GuidelineVersion | None:
    """The global :func:`reset`: the shipped file (version 0) is in force again where no database has its own."""
    return await reset(db, None)


async def previous_active(db: Db, database: str | None = None) -> GuidelineVersion | None:
    """The scope's version that was active before the current one (the target of a rollback)."""
    row = await db.fetchrow(
        """
        SELECT * FROM guideline_versions
        WHERE status = 'retired' AND activated_at IS NOT NULL AND database IS NOT DISTINCT FROM $1
        ORDER BY activated_at DESC LIMIT 1
        """,
        database,
    )
    return _from_row(row) if row else None


async def events(db: Db, *, database: str | None = None, only_global: bool = False,
                 limit: int = 100) -> list[GuidelineEvent]:
    """The most recent changes of the active version, newest first (filters as in :func:`list_all`)."""
    rows = await db.fetch(
        """
        SELECT * FROM guideline_events
        WHERE ($1::text IS NULL OR database = $1) AND (NOT $2 OR database IS NULL)
        ORDER BY id DESC LIMIT $3
        """,
        database, only_global, limit,
    )
    return [GuidelineEvent(r["id"], r["database"], r["action"], r["version"], r["previous"], r["actor"],
                           r["detail"] or {}, r["created_at"]) for r in rows]
