"""API keys: who may call the gateway (see ``gateway.auth``). Only a SHA-256 of each secret is stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from gateway.execute import faults
from gateway.store.pool import UNAVAILABLE, Db


@dataclass(frozen=True, slots=True)
class StoredKey:
    id: str
    name: str
    role: str
    databases: tuple[str, ...]
    pg_role: str | None
    secret_sha256: bytes
    created_at: datetime
    revoked_at: datetime | None

    def summary(self) -> dict[str, object]:
        """Everything about the key except its secret's hash, for ``keys list``."""
        return {"id": self.id, "name": self.name, "role": self.role, "databases": list(self.databases),
                "pg_role": self.pg_role, "created_at": self.created_at.isoformat(),
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


def _from_row(row: asyncpg.Record) -> StoredKey:
    return StoredKey(id=row["id"], name=row["name"], role=row["role"], databases=tuple(row["databases"]),
                     pg_role=row["pg_role"], secret_sha256=bytes(row["secret_sha256"]),
                     created_at=row["created_at"], revoked_at=row["revoked_at"])


class DuplicateKeyName(ValueError):
    """An active key already has this name."""


async def create(db: Db, *, key_id: str, name: str, role: str, databases: list[str], pg_role: str | None,
                 secret_sha256: bytes) -> StoredKey:
    try:
        row = await db.fetchrow(
            """
            INSERT INTO api_keys (id, name, role, databases, pg_role, secret_sha256)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING *
            """,
            key_id, name, role, databases, pg_role, secret_sha256,
        )
    except asyncpg.UniqueViolationError as exc:
        if exc.constraint_name == "api_keys_active_name":
            raise DuplicateKeyName(f"an active key is already named {name!r}; revoke it or pick another name") from exc
        raise
    assert row is not None
    return _from_row(row)


async def get(db: Db, key_id: str, *, timeout: float | None = None) -> StoredKey | None:
    """The key with this id (revoked or not), or None; ``store_unavailable`` when the store does not answer."""
    try:
        row = await db.fetchrow("SELECT * FROM api_keys WHERE id = $1", key_id, timeout=timeout)
    except UNAVAILABLE as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.store_error(exc, fault, "the API key could not be looked up") from exc
    return _from_row(row) if row else None


async def list_all(db: Db, *, include_revoked: bool = True) -> list[StoredKey]:
    rows = await db.fetch(
        "SELECT * FROM api_keys WHERE $1 OR revoked_at IS NULL ORDER BY created_at, id", include_revoked,
    )
    return [_from_row(r) for r in rows]


async def revoke(db: Db, key_id: str) -> StoredKey | None:
    """Revoke an active key; None when no active key has this id."""
    row = await db.fetchrow(
        "UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING *", key_id,
    )
    return _from_row(row) if row else None
