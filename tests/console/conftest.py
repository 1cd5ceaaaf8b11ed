"""The console under test: a real gateway (uvicorn on a loopback port, access control on, the embedded demo,
the scripted LLM) and one headless Chromium per test module, driven through Debian's chromium-driver.

Where no browser is installed the browser tests skip, saying what to install (`.ci/run` installs it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
import uvicorn

from gateway.api.app import create_app
from gateway.auth import new_token
from gateway.settings import (
    AuthSettings,
    DatabaseSettings,
    LLMSettings,
    MagicSettings,
    OidcSettings,
    Settings,
    StoreSettings,
)
from gateway.store import api_keys
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.auth.conftest import admin
from tests.conftest import PgServer
from tests.serving import free_port

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "console"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# The shipped demo questions and their SQL: the scripted model answers each with its gold SQL.
EXAMPLES = [json.loads(line) for line in (ROOT / "gateway/demo/examples.jsonl").read_text().splitlines() if line.strip()]
GOLD = {e["question"]: e["sql"] for e in EXAMPLES}
# This one is answered wrong first (an unknown column), so the stream shows a reflection fixing it.
REFLECTED = "How many orders were placed per region?"


def browser_missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if CHROMIUM is None or CHROMEDRIVER is None:
        return "no headless browser: install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
    return None


@dataclass
class Console:
    base: str        # http://127.0.0.1:PORT
    store_dsn: str
    keys: dict[str, str]  # role -> token

    @property
    def url(self) -> str:
        return self.base + "/console/"


def _script(llm: ScriptedLLM) -> None:
    seen: set[str] = set()

    def answer(req: LLMRequest) -> str | None:
        text = req.last_user
        for question, sql in GOLD.items():
            # The question being asked, not one quoted from an earlier turn of the conversation.
            if f"## Question\n{question}" in text:
                if question == REFLECTED and question not in seen:
                    seen.add(question)
                    return "<sql>SELECT r.region_name, count(*) AS orders FROM regions r GROUP BY 1</sql>"
                return f"<sql>{sql}</sql>"
        return None

    llm.add(answer)
    llm.add(lambda req: "<sql>SELECT count(*) AS orders FROM orders</sql>")


async def _create_keys(store_dsn: str) -> dict[str, str]:
    conn = await asyncpg.connect(store_dsn)
    try:
        keys = {}
        for role in ("client", "dba"):
            token = new_token()
            await api_keys.create(conn, key_id=token.key_id, name=f"console-{role}", role=role, databases=["*"],
                                  pg_role=None, secret_sha256=token.secret_sha256)
            keys[role] = token.token
        return keys
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def serve_console(pg: PgServer, demo_dsn: str, folder: Path, oidc: OidcSettings | None = None,
                        more: dict[str, str] | None = None, rules_dir: Path | None = None) -> AsyncIterator[Console]:
    """`serve` in this process: uvicorn on a loopback port in a thread, with its own store and LLM (and
    end users' tokens from an authorization server with ``oidc``; ``more`` databases by name -> DSN;
    ``rules_dir``: a copy of the rules when a test edits them, the repository's otherwise)."""
    store = f"nl2sql_console_{uuid.uuid4().hex[:10]}"
    await admin(pg.admin_dsn, f'CREATE DATABASE "{store}"')
    store_dsn = pg.dsn(store)
    with ScriptedLLM() as llm:
        _script(llm)
        settings = Settings(
            databases={"demo": DatabaseSettings(dsn=demo_dsn, description="The demo shop"),
                       **{name: DatabaseSettings(dsn=dsn) for name, dsn in (more or {}).items()}},
            store=StoreSettings(dsn=store_dsn),
            auth=AuthSettings(enabled=True, cache_ttl_s=0.0, oidc=oidc),
            magic=MagicSettings(schedule=False),
            llm=LLMSettings(base_url=llm.base_url, model="scripted-model", timeout_s=10.0, max_retries=0),
            rules_dir=rules_dir or ROOT / "rules",
            semantic_dir=ROOT / "semantic",  # the shipped demo model: the Metrics page
            guidelines_dir=folder,
        )
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                               log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            if not thread.is_alive():
                raise AssertionError("the console's server did not start")
            await asyncio.sleep(0.05)
        try:
            yield Console(f"http://127.0.0.1:{port}", store_dsn, await _create_keys(store_dsn))
        finally:
            server.should_exit = True
            await asyncio.to_thread(thread.join, 30)
    await admin(pg.admin_dsn, f'DROP DATABASE IF EXISTS "{store}" WITH (FORCE)')


@pytest.fixture(scope="module")
async def console(pg: PgServer, demo_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Console]:
    """The console with API keys only."""
    async with serve_console(pg, demo_dsn, tmp_path_factory.mktemp("console")) as served:
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium for the module (a fresh profile: sessionStorage starts empty)."""
    reason = browser_missing()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM  # type: ignore[assignment]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--force-device-scale-factor=1", "--lang=en-US"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()
