"""``nl2sql-gateway demo``: embedded Postgres + demo database + the gateway on 127.0.0.1, no other service."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from gateway.assets import shipped_dir
from gateway.demo.embedded import EmbeddedPostgres, default_data_dir
from gateway.demo.generator import derive_dsn, ensure_demo_database
from gateway.demo.lock import demo_lock
from gateway.ports import ensure_port_free
from gateway.settings import DatabaseSettings, Settings, load_settings
from gateway.store import examples
from gateway.store.migrate import migrate

STORE_DATABASE = "nl2sql_store"
EXAMPLES = Path(__file__).with_name("examples.jsonl")
CONFIG_FILE = "nl2sql-gateway-demo.toml"  # in the data directory, beside the cluster it points at
DESCRIPTION = "Demo BI database: customers, products, orders, payments, employees, events."

BANNER = """
nl2sql-gateway demo is serving on http://127.0.0.1:{port}  (Ctrl-C or SIGTERM stops it and the embedded Postgres)
  Postgres data: {data_dir}
  Demo database: {reader_dsn}  (read-only role; psql "{reader_dsn}")
  OpenAPI docs:  http://127.0.0.1:{port}/docs
  Web console:   http://127.0.0.1:{port}/console/  (no sign-in needed: access control is off on loopback)
  LLM:           {llm}

Every other command reaches the running demo through its config file:
  export NL2SQL_CONFIG={config}
  nl2sql-gateway schema demo | head -c 600
  echo "SELECT email FROM customers" | nl2sql-gateway check --database demo
  nl2sql-gateway keys create --name me --role client --databases demo
  nl2sql-gateway eval demo          (needs an LLM, see below)

Try:
  curl -s http://127.0.0.1:{port}/v1/databases
  curl -s http://127.0.0.1:{port}/v1/databases/demo/schema | head -c 600
  curl -s -X POST http://127.0.0.1:{port}/v1/sql -H 'content-type: application/json' \\
       -d '{{"database": "demo", "sql": "SELECT r.name, count(*) AS orders FROM orders o JOIN customers c \
USING (customer_id) JOIN regions r ON r.region_id = c.region_id GROUP BY r.name ORDER BY orders DESC"}}'
  curl -s -X POST http://127.0.0.1:{port}/v1/check -H 'content-type: application/json' \\
       -d '{{"sql": "SELECT pg_sleep(10)"}}'
  curl -s -X POST http://127.0.0.1:{port}/v1/ask -H 'content-type: application/json' \\
       -d '{{"database": "demo", "question": "How many orders were placed per region?"}}'
{ask_note}  curl -s http://127.0.0.1:{port}/metrics | grep ^nl2sql_ | head
"""


NO_LLM_NOTE = """       (a verified example answers this one offline; other questions need an LLM: set OPENAI_BASE_URL,
        OPENAI_API_KEY and NL2SQL_LLM__MODEL before starting the demo)
"""


def demo_banner(settings: Settings, data_dir: Path, config: Path) -> str:
    """What the demo prints once it is ready; the LLM hint only when no LLM is configured."""
    from gateway.banner import llm_line

    return BANNER.format(port=settings.server.port, data_dir=data_dir, reader_dsn=settings.databases["demo"].dsn,
                         config=config, llm=llm_line(settings), ask_note="" if settings.llm.model else NO_LLM_NOTE)


async def _prepare(server: EmbeddedPostgres) -> tuple[str, str]:
    import asyncpg  # noqa: PLC0415 - demo set-up is part of the execution layer

    reader_dsn = await ensure_demo_database(server.admin_dsn)
    admin = await asyncpg.connect(server.admin_dsn)
    try:
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", STORE_DATABASE):
            await admin.execute(f'CREATE DATABASE "{STORE_DATABASE}"')
    finally:
        await admin.close()
    store_dsn = derive_dsn(server.admin_dsn, database=STORE_DATABASE)
    await _seed_verified_examples(store_dsn)
    return reader_dsn, store_dsn


async def _seed_verified_examples(store_dsn: str) -> None:
    """A few verified question/SQL pairs, so that /v1/ask answers them with no LLM configured (the store
    matches the exact question) and uses them as few-shot examples when an LLM is there."""
    import asyncpg  # noqa: PLC0415

    store = await asyncpg.connect(store_dsn)
    try:
        await migrate(store)
        for line in EXAMPLES.read_text(encoding="utf-8").splitlines():
            if line.strip():
                pair = json.loads(line)
                # Seeded by the demo itself, so approved (source "dba"): usable at once.
                await examples.add(store, database="demo", question=pair["question"], sql=pair["sql"],
                                   source="dba", proposed_by="demo")
    finally:
        await store.close()


def demo_settings(reader_dsn: str, store_dsn: str, port: int) -> Settings:
    """The demo's settings: the environment still supplies the LLM endpoint and any other override."""
    settings = load_settings(
        databases={"demo": DatabaseSettings(dsn=reader_dsn, description=DESCRIPTION)},
        rules_dir=shipped_dir("rules"),  # the shipped rules/demo.yaml, wherever the demo is started from
        semantic_dir=shipped_dir("semantic"),  # the shipped semantic/demo.yaml: metrics, dimensions, synonyms
    )
    settings.server.host = "127.0.0.1"  # the demo never listens beyond loopback
    settings.auth.enabled = False  # no API keys to hand out: allowed on loopback only (gateway.auth)
    settings.server.port = port
    if settings.store.dsn is None:
        settings.store.dsn = store_dsn
        # The demo's verified examples answer their exact questions even with no LLM configured.
        settings.store.exact_match_answers = True
    return settings


def write_config(path: Path, settings: Settings) -> Path:
    """A config file for the running demo, so that ``schema``, ``check``, ``keys``, ``eval`` and the other
    commands reach it with ``NL2SQL_CONFIG=path``. DSNs only: the embedded server trusts local sockets."""
    demo = settings.databases["demo"]
    lines = [
        "# Written by `nl2sql-gateway demo` for the demo it runs; rewritten at each start.",
        f"# Use it with:  export NL2SQL_CONFIG={path}",
        f"rules_dir = {json.dumps(str(settings.rules_dir))}",
        f"guidelines_dir = {json.dumps(str(settings.guidelines_dir))}",
        "",
        "[databases.demo]",
        f"dsn = {json.dumps(demo.dsn)}",
        f"description = {json.dumps(demo.description)}",
        "",
        "[store]",
        f"dsn = {json.dumps(settings.store.dsn)}",
        f"exact_match_answers = {json.dumps(settings.store.exact_match_answers)}",
        "",
        "[auth]",
        "enabled = false  # the demo serves on 127.0.0.1 only",
        "",
        "[server]",
        f"port = {settings.server.port}",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@contextmanager
def _sigterm_stops_like_ctrl_c() -> Iterator[None]:
    """SIGTERM unwinds the demo as Ctrl-C does, so the embedded Postgres is stopped on the way out.

    While the gateway serves, its server handles SIGTERM itself (drains, then returns); this covers the
    set-up before it (starting Postgres, building the demo database), where the default action would kill
    the process and leave the postmaster running.
    """
    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_demo(data_dir: Path | None, port: int, serve: Callable[[Settings], None]) -> None:
    with _sigterm_stops_like_ctrl_c():
        _run_demo(data_dir, port, serve)


def _run_demo(data_dir: Path | None, port: int, serve: Callable[[Settings], None]) -> None:
    data_dir = (data_dir or default_data_dir()).expanduser().absolute()
    # Before the port check: a second `demo` with the same defaults is told about the first, not the port.
    with demo_lock(data_dir, port):
        ensure_port_free("127.0.0.1", port)  # before the embedded server starts or a banner says "serving"
        _serve_demo(data_dir, port, serve)


def _serve_demo(data_dir: Path, port: int, serve: Callable[[Settings], None]) -> None:
    server = EmbeddedPostgres(data_dir)
    print(f"starting embedded Postgres in {data_dir} ...", flush=True)
    try:
        server.start()  # inside the try: a signal while it starts still stops what did start
        reader_dsn, store_dsn = asyncio.run(_prepare(server))
        settings = demo_settings(reader_dsn, store_dsn, port)
        config = write_config(data_dir / CONFIG_FILE, settings)
        print(demo_banner(settings, data_dir, config), flush=True)
        serve(settings)
    finally:
        print("stopping embedded Postgres ...", flush=True)
        server.stop()
