"""Fixtures for conversations and clarifying questions: a store database shared by the module (each test's
conversations have their own random ids), the demo database and the session's scripted LLM over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.settings import (
    AskPolicy,
    AuthSettings,
    DatabaseSettings,
    Limits,
    LLMSettings,
    MagicSettings,
    Settings,
    StoreSettings,
)
from gateway.testing.scripted_llm import ScriptedLLM
from tests.conftest import PgServer, scratch_database


@pytest.fixture(scope="module")
async def store_dsn(pg: PgServer) -> AsyncIterator[str]:
    async with scratch_database(pg, "nl2sql_conv_store") as dsn:
        yield dsn


def conv_settings(demo_dsn: str, store_dsn: str | None, llm: ScriptedLLM, tmp: Path, *, auth: bool = False,
                  store: dict[str, Any] | None = None, **ask: Any) -> Settings:
    (tmp / "rules").mkdir(exist_ok=True)
    (tmp / "guidelines").mkdir(exist_ok=True)
    database = DatabaseSettings(dsn=demo_dsn, ask=AskPolicy(**ask), limits=Limits(statement_timeout_ms=3000,
                                                                                  max_rows=200))
    return Settings(
        # The same database under two names: a conversation stays on the one it started on.
        databases={"demo": database, "demo2": database},
        store=StoreSettings(dsn=store_dsn, **(store or {})),
        llm=LLMSettings(base_url=llm.base_url, model="scripted-model", timeout_s=5.0, max_retries=0),
        magic=MagicSettings(schedule=False),
        auth=AuthSettings(enabled=auth, cache_ttl_s=0.0),
        rules_dir=tmp / "rules",
        guidelines_dir=tmp / "guidelines",
    )
