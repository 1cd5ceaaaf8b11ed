"""Token buckets in the store (``rate_buckets``, ``take_tokens()``), shared by every worker and replica.

>>> await take(store.pool, "key:k1", rate_per_s=10, burst=20, want=2)  # doctest: +SKIP
(2, 0.0)
"""

from __future__ import annotations

from gateway.store.pool import Db


async def take(db: Db, key: str, *, rate_per_s: float, burst: float, want: int) -> tuple[int, float]:
    """Up to ``want`` tokens from ``key``'s bucket: (granted, seconds until one is free when none was)."""
    row = await db.fetchrow("SELECT granted, wait_s FROM take_tokens($1, $2, $3, $4)", key, rate_per_s,
                            float(burst), want)
    assert row is not None  # a function with OUT parameters returns one row
    return int(row["granted"]), float(row["wait_s"])


async def forget(db: Db, prefix: str) -> None:
    """Drop the buckets whose key starts with ``prefix`` (tests, and a key's removal)."""
    await db.execute("DELETE FROM rate_buckets WHERE starts_with(key, $1)", prefix)
