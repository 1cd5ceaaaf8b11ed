"""The audit trail of rules edited from the console (store migration 0010)."""

from __future__ import annotations

from typing import Any

from gateway.store.pool import Db


async def record(db: Db, *, database: str, actor: str, file: str, before: dict[str, Any],
                 after: dict[str, Any]) -> int:
    return int(await db.fetchval(
        "INSERT INTO rules_edits (database, actor, file, before, after) VALUES ($1, $2, $3, $4, $5) RETURNING id",
        database, actor, file, before, after))  # the pool encodes jsonb


async def recent(db: Db, database: str, limit: int = 20) -> list[dict[str, Any]]:
    rows = await db.fetch("SELECT * FROM rules_edits WHERE database = $1 ORDER BY id DESC LIMIT $2", database, limit)
    return [{"id": r["id"], "database": r["database"], "actor": r["actor"], "file": r["file"],
             "before": r["before"], "after": r["after"],
             "created_at": r["created_at"].isoformat()} for r in rows]
