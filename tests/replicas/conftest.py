"""A migrated store on a fresh database per test (the replicas' shared state)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.settings import StoreSettings
from gateway.store import Store


@pytest.fixture
async def store(fresh_db: str) -> AsyncIterator[Store]:
    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        yield store
    finally:
        await store.close()
