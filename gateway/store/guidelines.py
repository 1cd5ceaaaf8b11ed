"""Guideline versions: candidate -> active -> retired, with provenance and evaluation.

Version 0 is the shipped guideline file (``guidelines_dir``), in force while no stored version is active;
:func:`activate_shipped` returns to it.

Writing a candidate and activating a version are each one transaction, so a regeneration run that dies
half-way leaves no half-written version and never touches the active one. A unique partial index keeps at
most one version active even when two replicas activate at the same moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import asyncpg

from gateway.store.pool import Db

Status = Literal["candidate", "active", "retired"]
ACTIVATION_LOCK_KEY = 7_460_201_003


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

    def summary(self) -> dict[str, Any]:
        return {
            "version": self.version, "parent": self.parent, "status": self.status,
            "created_at": self.created_at.isoformat(),
            "activated_at": self.activated_at.isoformat() if self.activated_at else None,
            "corrections": len(self.provenance.get("corrections", [])),
            "evaluation_passed": (self.evaluation or {}).get("passed"),
        }

    def as_dict(self) -> dict[str, Any]:
        return {**self.summary(), "text": self.text, "provenance": self.provenance, "evaluation": self.evaluation}


def _from_row(row: asyncpg.Record) -> GuidelineVersion:
    return GuidelineVersion(
        version=row["version"], parent=row["parent"], text=row["text"], status=row["status"],
        provenance=row["provenance"] or {}, evaluation=row["evaluation"], created_at=row["created_at"],
        activated_at=row["activated_at"],
    )


async def add_candidate(conn: asyncpg.Connection, *, text: str, parent: int | None,
                        provenance: dict[str, Any]) -> int:
    return int(await conn.fetchval(
        "INSERT INTO guideline_versions (parent, text, status, provenance) VALUES ($1, $2, 'candidate', $3) "
        "RETURNING version",
        parent, text, provenance,
    ))


async def get(db: Db, version: int) -> GuidelineVersion | None:
    row = await db.fetchrow("SELECT * FROM guideline_versions WHERE version = $1", version)
    return _from_row(row) if row else None


async def active(db: Db) -> GuidelineVersion | None:
    row = await db.fetchrow("SELECT * FROM guideline_versions WHERE status = 'active'")
    return _from_row(row) if row else None


async def list_all(db: Db) -> list[GuidelineVersion]:
    return [_from_row(r) for r in await db.fetch("SELECT * FROM guideline_versions ORDER BY version")]


async def set_evaluation(db: Db, version: int, evaluation: dict[str, Any]) -> None:
    await db.execute("UPDATE guideline_versions SET evaluation = $2 WHERE version = $1", version, evaluation)


async def activate(db: asyncpg.Pool, version: int) -> GuidelineVersion | None:
    """Make ``version`` the only active one, in one transaction; None when it does not exist."""
    async with db.acquire() as conn, conn.transaction():
        # Concurrent activations (two replicas, a DBA and the scheduler) queue here instead of racing into
        # the one-active index.
        await conn.execute("SELECT pg_advisory_xact_lock($1)", ACTIVATION_LOCK_KEY)
        target = await conn.fetchrow("SELECT * FROM guideline_versions WHERE version = $1", version)
        if target is None:
            return None
        if target["status"] != "active":
            await conn.execute("UPDATE guideline_versions SET status = 'retired' WHERE status = 'active'")
            target = await conn.fetchrow(
                "UPDATE guideline_versions SET status = 'active', activated_at = now() WHERE version = $1 "
                "RETURNING *", version,
            )
    # The row as this activation left it: read after the lock is gone, a racing activation may already have
    # retired it again.
    return _from_row(target)


SHIPPED = 0  # the version number of the shipped guideline file


async def activate_shipped(db: asyncpg.Pool) -> GuidelineVersion | None:
    """Retire the active stored version, so that the shipped file (version 0) is in force again; returns
    the version that was retired (None when the shipped file already was in force)."""
    async with db.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", ACTIVATION_LOCK_KEY)
        row = await conn.fetchrow(
            "UPDATE guideline_versions SET status = 'retired' WHERE status = 'active' RETURNING *")
    return _from_row(row) if row else None


async def previous_active(db: Db) -> GuidelineVersion | None:
    """The version that was active before the current one (the target of a rollback)."""
    row = await db.fetchrow(
        """
        SELECT * FROM guideline_versions
        WHERE status = 'retired' AND activated_at IS NOT NULL
        ORDER BY activated_at DESC LIMIT 1
        """
    )
    return _from_row(row) if row else None
