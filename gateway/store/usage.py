"""LLM tokens spent per owner and UTC day (``token_usage``), for ``llm.daily_token_budget_per_user``.

One row per (owner, day), upserted after each answer; the answers of concurrent requests are added in one
statement (``gateway.store.batch``). The day is the store's UTC date, so replicas whose clocks differ agree.
"""

from __future__ import annotations

from gateway.store.batch import Batcher
from gateway.store.pool import Db, Store

_TODAY = "(now() AT TIME ZONE 'UTC')::date"


async def spent_today(db: Db, owner: str) -> int:
    """Tokens ``owner`` spent today (UTC)."""
    spent = await db.fetchval(f"SELECT tokens FROM token_usage WHERE owner = $1 AND day = {_TODAY}", owner)
    return int(spent or 0)


async def add_many(db: Db, spent: list[tuple[str, int]]) -> list[None]:
    """Add each (owner, tokens) to today's row, and delete the rows of days before yesterday."""
    totals: dict[str, int] = {}
    for owner, tokens in spent:
        totals[owner] = totals.get(owner, 0) + tokens
    await db.execute(
        f"""
        INSERT INTO token_usage (owner, day, tokens)
        SELECT r.owner, {_TODAY}, r.tokens FROM unnest($1::text[], $2::bigint[]) AS r(owner, tokens)
        ON CONFLICT (owner, day) DO UPDATE SET tokens = token_usage.tokens + excluded.tokens, updated_at = now()
        """,
        list(totals), list(totals.values()),
    )
    await db.execute(f"DELETE FROM token_usage WHERE day < {_TODAY} - 1")
    return [None] * len(spent)


async def add(store: Store, owner: str, tokens: int) -> None:
    """Add ``tokens`` to ``owner``'s row for today, with the answers of concurrent requests; returns once
    committed."""
    batcher = store.batchers.get("token_usage")
    if batcher is None:
        batcher = store.batchers["token_usage"] = Batcher(
            lambda items: add_many(store.pool, items), lambda one: _add_one(store.pool, one))
    await batcher.submit((owner, tokens))


async def _add_one(db: Db, item: tuple[str, int]) -> None:
    await add_many(db, [item])
