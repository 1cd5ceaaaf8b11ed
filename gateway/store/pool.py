"""The store's connection pool, opened by the Gateway (or a CLI command) and migrated on open.

Repositories (``gateway.store.audit``, ``corrections``, ...) are plain functions that take a ``Db``: the
pool for a single statement, or a connection inside :meth:`Store.transaction` when several writes must
commit together. A 2xx response is only sent after that transaction committed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import asyncpg

from gateway import errors
from gateway.execute import faults
from gateway.settings import StoreSettings
from gateway.store.migrate import migrate

# Either the pool or one of its connections: both answer fetch/fetchrow/fetchval/execute.
Db: TypeAlias = asyncpg.Pool | asyncpg.Connection

# Failures that may mean "the store is not reachable"; gateway.execute.faults tells them from a bug of ours.
UNAVAILABLE = faults.FAULTS


@contextmanager
def store_faults(doing: str) -> Iterator[None]:
    """Turn a store fault inside the block into ``store_unavailable`` (chained; other errors pass).

    ``doing`` ends the detail, telling the client what did not happen ("the feedback was not recorded").
    """
    try:
        yield
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.store_error(exc, fault, doing) from exc


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", schema="pg_catalog", encoder=json.dumps, decoder=json.loads)
    await conn.set_type_codec("json", schema="pg_catalog", encoder=json.dumps, decoder=json.loads)


@dataclass
class Store:
    """The gateway's own database."""

    pool: asyncpg.Pool
    # Group commit of the per-answer writes (gateway.store.batch), by repository: made on first use.
    batchers: dict[str, Any] = field(default_factory=dict)

    @classmethod
    async def open(cls, settings: StoreSettings, *, apply_migrations: bool = True) -> Store:
        if not settings.dsn:
            raise errors.StoreNotConfigured("store.dsn is not set; the gateway keeps feedback and guidelines there")
        password = settings.password.get_secret_value() if settings.password else None
        try:
            pool = await asyncpg.create_pool(
                dsn=settings.dsn, password=password, min_size=1, max_size=settings.pool_max_size,
                init=_init_connection, command_timeout=settings.command_timeout_s,
            )
        except UNAVAILABLE as exc:
            fault = faults.classify(exc)
            if fault is None:
                raise
            raise faults.store_error(exc, fault, f"cannot connect to it: {exc}") from exc
        store = cls(pool)
        if apply_migrations:
            try:
                async with pool.acquire() as conn:
                    await migrate(conn)
            except BaseException:
                await pool.close()
                raise
        return store

    async def close(self) -> None:
        for batcher in list(self.batchers.values()):
            await batcher.close()  # the rows of requests still waiting are written first
        await self.pool.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection inside a transaction: everything done on it commits together or not at all."""
        async with self.pool.acquire() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def session(self) -> AsyncIterator[asyncpg.Connection]:
        """One connection for session-level state (advisory locks); no transaction."""
        async with self.pool.acquire() as conn:
            yield conn

    async def ping(self, timeout: float = 1.0) -> str:
        try:
            await self.pool.fetchval("SELECT 1", timeout=timeout)
            return "ok"
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready", with its reason
            return f"unavailable: {type(exc).__name__}"


def as_dict(record: asyncpg.Record | None) -> dict[str, Any] | None:
    return dict(record) if record is not None else None
