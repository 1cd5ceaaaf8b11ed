"""Access-control fixtures: a store database, Postgres roles to map keys to, a database with row-level
security, and a gateway with auth on, driven in-process over ASGI with its real lifespan."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from gateway.api.app import create_app
from gateway.auth import new_token
from gateway.service import Gateway as GatewayService
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
from tests.conftest import PgServer


@dataclass(frozen=True)
class Roles:
    reader: str  # the gateway's login role (the demo's read-only role)
    bi: str      # may read regions and products in the demo database, nothing else
    rls_a: str   # see only their own rows of notes in the rls database
    rls_b: str


@dataclass
class Gateway:
    http: httpx.AsyncClient
    state: GatewayState
    service: GatewayService | None = None  # the app's Gateway: the Python API beside the HTTP one

    async def key(self, role: str = "client", databases: tuple[str, ...] = ("*",), pg_role: str | None = None,
                  name: str | None = None) -> str:
        """Create a key straight in the store (as `keys create` does) and return its token."""
        assert self.state.store is not None
        token = new_token()
        await api_keys.create(self.state.store.pool, key_id=token.key_id, name=name or f"test-{token.key_id}",
                              role=role, databases=list(databases), pg_role=pg_role,
                              secret_sha256=token.secret_sha256)
        return token.token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def admin(dsn: str, *statements: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
async def store_dsn(pg: PgServer) -> AsyncIterator[str]:
    name = f"nl2sql_auth_store_{uuid.uuid4().hex[:10]}"
    await admin(pg.admin_dsn, f'CREATE DATABASE "{name}"')
    yield pg.dsn(name)
    await admin(pg.admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
async def roles(pg: PgServer, demo_dsn: str, demo_admin_dsn: str) -> AsyncIterator[Roles]:
    suffix = uuid.uuid4().hex[:8]
    reader = urlsplit(demo_dsn).username
    assert reader
    r = Roles(reader=reader, bi=f"auth_bi_{suffix}", rls_a=f"auth_rls_a_{suffix}", rls_b=f"auth_rls_b_{suffix}")
    await admin(
        demo_admin_dsn,
        *(f'CREATE ROLE "{name}" NOLOGIN' for name in (r.bi, r.rls_a, r.rls_b)),
        f'GRANT USAGE ON SCHEMA public TO "{r.bi}"',
        f'GRANT SELECT ON regions, products TO "{r.bi}"',
        f'GRANT "{r.bi}", "{r.rls_a}", "{r.rls_b}" TO "{reader}"',  # the login role may switch to them
    )
    yield r
    await admin(demo_admin_dsn, *(f'DROP OWNED BY "{name}"' for name in (r.bi, r.rls_a, r.rls_b)),
                 *(f'DROP ROLE "{name}"' for name in (r.bi, r.rls_a, r.rls_b)))


@pytest.fixture(scope="module")
async def rls_dsn(pg: PgServer, roles: Roles) -> AsyncIterator[str]:
    """A database whose notes table has row-level security: each role sees the rows it owns."""
    name = f"nl2sql_auth_rls_{uuid.uuid4().hex[:10]}"
    await admin(pg.admin_dsn, f'CREATE DATABASE "{name}"')
    await admin(
        pg.dsn(name),
        "CREATE TABLE notes (id int PRIMARY KEY, owner name NOT NULL, body text NOT NULL)",
        f"INSERT INTO notes VALUES (1, '{roles.rls_a}', 'a-one'), (2, '{roles.rls_a}', 'a-two'), "
        f"(3, '{roles.rls_b}', 'b-one')",
        "ALTER TABLE notes ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY own_rows ON notes FOR SELECT USING (owner = current_user)",
        f'GRANT SELECT ON notes TO "{roles.reader}", "{roles.rls_a}", "{roles.rls_b}"',
    )
    yield pg.dsn(name, user=roles.reader, password=os.environ.get("NL2SQL_TEST_READER_PASSWORD"))
    await admin(pg.admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def llm_server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def auth_settings(demo_dsn: str, store_dsn: str, folder: Path, *, rls_dsn: str | None = None,
                  llm_url: str | None = None, **auth: object) -> Settings:
    databases = {
        # One connection: a role assumed for one request must not leak into the next one on it.
        "demo": DatabaseSettings(dsn=demo_dsn, pool_max_size=1, limits=Limits(statement_timeout_ms=3000)),
    }
    if rls_dsn:
        databases["rls"] = DatabaseSettings(dsn=rls_dsn, pool_max_size=1)
    (folder / "rules").mkdir(exist_ok=True)
    (folder / "guidelines").mkdir(exist_ok=True)
    return Settings(
        databases=databases,
        store=StoreSettings(dsn=store_dsn),
        auth=AuthSettings(**{"enabled": True, "cache_ttl_s": 0.0, **auth}),  # type: ignore[arg-type]
        magic=MagicSettings(schedule=False),
        llm=LLMSettings(base_url=llm_url, model="scripted-model" if llm_url else None, timeout_s=5.0,
                        max_retries=0),
        rules_dir=folder / "rules",
        guidelines_dir=folder / "guidelines",
    )


@pytest.fixture(scope="module")
async def gw(demo_dsn: str, store_dsn: str, rls_dsn: str, llm_server: ScriptedLLM,
             tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    settings = auth_settings(demo_dsn, store_dsn, tmp_path_factory.mktemp("auth"), rls_dsn=rls_dsn,
                             llm_url=llm_server.base_url)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as http:
            yield Gateway(http, app.state.gateway, app.state.service)
