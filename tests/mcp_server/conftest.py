"""MCP fixtures: the gateway behind a real uvicorn on loopback (streamable HTTP at /mcp, API keys in a store
database) or spawned as ``python -m gateway mcp`` (stdio), both on the embedded demo database with the
shipped rules (hidden columns) and the scripted LLM; the SDK's own client drives them."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.api.app import create_app
from gateway.auth import new_token
from gateway.settings import (
    AuthSettings,
    DatabaseSettings,
    Limits,
    LLMSettings,
    MagicSettings,
    Settings,
    StoreSettings,
)
from gateway.state import GatewayState
from gateway.store import api_keys
from gateway.testing.scripted_llm import ScriptedLLM
from tests.auth.conftest import store_dsn  # noqa: F401 - a store database for the keys, per module

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("salary", "email", "segment")  # rules/demo.yaml, plus customers.segment (folder_with_rules)
HIDDEN_VALUES = ("Enterprise", "Small Business", "Consumer")  # customers.segment's values


# The shipped rules, plus a hidden low-cardinality text column: its stored values are sampled for value
# matching, so search_schema must prove it leaves them out ('Enterprise', 'Small Business', 'Consumer').
HIDDEN_SEGMENT = "  customers:\n    columns:\n      email: {hidden: true}          # personal data: never shown to the LLM, blocked in SQL\n"


def folder_with_rules(folder: Path) -> Path:
    (folder / "rules").mkdir(exist_ok=True)
    (folder / "guidelines").mkdir(exist_ok=True)
    text = (ROOT / "rules" / "demo.yaml").read_text(encoding="utf-8")
    assert HIDDEN_SEGMENT in text, "rules/demo.yaml changed: update the MCP tests' copy"
    text = text.replace(HIDDEN_SEGMENT, HIDDEN_SEGMENT + "      segment: {hidden: true}\n")
    (folder / "rules" / "demo.yaml").write_text(text, encoding="utf-8")
    return folder


def mcp_settings(demo_dsn: str, store: str, folder: Path, llm_url: str, *, auth: bool) -> Settings:
    folder_with_rules(folder)
    return Settings(
        databases={"demo": DatabaseSettings(dsn=demo_dsn, limits=Limits(statement_timeout_ms=3000)),
                   # a second database, for keys that may not use it
                   "other": DatabaseSettings(dsn=demo_dsn, limits=Limits(statement_timeout_ms=3000))},
        store=StoreSettings(dsn=store),
        auth=AuthSettings(enabled=auth, cache_ttl_s=0.0),
        magic=MagicSettings(schedule=False),
        llm=LLMSettings(base_url=llm_url, model="scripted-model", timeout_s=5.0, max_retries=0),
        rules_dir=folder / "rules",
        guidelines_dir=folder / "guidelines",
    )


@asynccontextmanager
async def served(settings: Settings, sock: socket.socket | None = None) -> AsyncIterator[tuple[str, GatewayState]]:
    """The app behind a real uvicorn on loopback (on ``sock`` when given: a test that must know the URL before
    the settings are made binds it first), in this event loop; yields its base URL and state."""
    if sock is None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app.state.gateway
    finally:
        server.should_exit = True
        await task


@dataclass
class Served:
    base: str
    state: GatewayState

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    async def key(self, role: str = "client", databases: tuple[str, ...] = ("*",)) -> str:
        """Create a key straight in the store (as `keys create` does) and return its token."""
        assert self.state.store is not None
        token = new_token()
        await api_keys.create(self.state.store.pool, key_id=token.key_id, name=f"mcp-{token.key_id}", role=role,
                              databases=list(databases), pg_role=None, secret_sha256=token.secret_sha256)
        return token.token


@pytest.fixture(scope="module")
async def http_gw(demo_dsn: str, store_dsn: str, llm_server: ScriptedLLM,  # noqa: F811
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    settings = mcp_settings(demo_dsn, store_dsn, tmp_path_factory.mktemp("mcp-http"), llm_server.base_url,
                            auth=True)
    async with served(settings) as (base, state):
        yield Served(base, state)


@asynccontextmanager
async def http_client(url: str, token: str | None, *, mode: str = "auto", **options: Any) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending ``token`` as a Bearer API key; ``options``: more of the
    client's (an elicitation callback, extensions)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers=headers) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode, **options) as client:
        yield client


def stdio_params(config: Path, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """``python -m gateway mcp --config CONFIG``, as a desktop assistant would start it."""
    return StdioServerParameters(command=sys.executable, args=["-m", "gateway", "mcp", "--config", str(config), *args],
                                 env={"PYTHONPATH": str(ROOT), **(env or {})}, cwd=str(ROOT))


def write_config(folder: Path, demo_dsn: str, store: str, llm_url: str) -> Path:
    folder_with_rules(folder)
    path = folder / "nl2sql-gateway.toml"
    path.write_text(
        f'rules_dir = "{folder / "rules"}"\n'
        f'guidelines_dir = "{folder / "guidelines"}"\n'
        "[llm]\n"
        f'base_url = "{llm_url}"\nmodel = "scripted-model"\ntimeout_s = 5.0\nmax_retries = 0\n'
        "[store]\n"
        f'dsn = "{store}"\n'
        "[magic]\nschedule = false\n"
        "[databases.demo]\n"
        f'dsn = "{demo_dsn}"\n', encoding="utf-8")
    return path
