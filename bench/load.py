"""Load: sustained ``POST /v1/sql`` and ``POST /v1/ask`` at rising concurrency, and where backpressure starts.

    python bench/load.py [--levels 1,4,16,64,256] [--seconds 8] [--llm-min 0.3 --llm-max 0.8]

One command starts everything on loopback: an embedded PostgreSQL in a temporary directory with the demo
database, a scripted OpenAI-compatible LLM in its own process answering after a random 0.3-0.8 s (a
realistic model latency), and the gateway as a uvicorn subprocess (uvloop, httptools) with its default
limits except those printed at the start. A client in this process (httpx, one event loop) keeps N requests
in flight for a fixed time per level; the endpoints alternate at each level (sql, ask, sql, ask, ...) so
both see the same machine state. Backpressure answers (429, 503 ``overloaded``) are counted apart from
errors; the table says at which level they start. The client's CPU time is printed: it competes with the
gateway, its Postgres and the scripted LLM for the same cores.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import multiprocessing.connection
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` as a package, run as a script
from bench.processes import in_own_process  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres
from gateway.demo.generator import ensure_demo_database
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM

QUESTION = "How many orders were not cancelled?"
ANSWER_SQL = "SELECT count(*) AS orders FROM orders WHERE status <> 'cancelled'"
SQL_QUERIES = (
    "SELECT count(*) AS n FROM orders WHERE status = 'cancelled'",
    ("SELECT r.name, count(*) AS customers FROM customers c JOIN regions r ON r.region_id = c.region_id "
     "GROUP BY r.name ORDER BY customers DESC"),
    "SELECT product_id, name, list_price FROM products ORDER BY list_price DESC LIMIT 20",
)
# The gateway's limits for this run (everything else at its defaults).
GATEWAY_ENV = {
    "NL2SQL_BACKPRESSURE__MAX_IN_FLIGHT": "128",
    "NL2SQL_LLM__MAX_CONCURRENCY": "64",
    "NL2SQL_LLM__MAX_QUEUED": "32",
    "NL2SQL_DATABASES__DEMO__POOL_MAX_SIZE": "10",
    "NL2SQL_SERVER__REQUEST_TIMEOUT_S": "30",
}
BACKPRESSURE_CODES = {"too_many_requests", "overloaded"}
# httpx's connection pool scans its connections on every request: many small clients cost the client far
# less CPU than one client with hundreds of connections.
WORKERS_PER_CLIENT = 8


# --- the scripted LLM, in its own process so that it does not share the client's GIL ---------------------
def _serve_llm(low: float, high: float, conn: multiprocessing.connection.Connection) -> None:
    llm = ScriptedLLM().start()

    def answer(request: LLMRequest) -> Reply:
        return Reply(f"<thinking>orders not cancelled</thinking>\n<sql>{ANSWER_SQL}</sql>",
                     delay_s=random.uniform(low, high))

    llm.add(answer)
    conn.send(llm.base_url)
    conn.recv()  # until told to stop
    llm.stop()


def scripted_llm(low: float, high: float) -> AbstractContextManager[str]:
    return in_own_process(_serve_llm, low, high)


# --- the gateway as a real server process -----------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gateway(dsn: str, llm_url: str, cwd: Path) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, **GATEWAY_ENV, "NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_LLM__BASE_URL": llm_url,
           "NL2SQL_LLM__MODEL": "scripted-model", "NL2SQL_AUTH__ENABLED": "false",
           "NL2SQL_LOGGING__LEVEL": "WARNING"}
    env.pop("NL2SQL_CONFIG", None)
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "gateway.api.app:app_factory", "--host", "127.0.0.1",
           "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log",
           "--log-level", "warning", "--backlog", "4096"]
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError("the gateway exited during start-up")
            time.sleep(0.1)
        else:
            raise RuntimeError("the gateway did not start")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


# --- load -------------------------------------------------------------------------------------------------
@dataclass
class Level:
    endpoint: str
    concurrency: int
    seconds: float = 0.0
    client_cpu_s: float = 0.0
    latencies_ok: list[float] = field(default_factory=list)
    latencies_all: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> int:
        return self.outcomes["200"]

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    @property
    def shed(self) -> int:
        return sum(n for k, n in self.outcomes.items() if k in BACKPRESSURE_CODES)

    @property
    def errors(self) -> int:
        return self.total - self.ok - self.shed


def _pct(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def run_level(clients: list[httpx.AsyncClient], endpoint: str, concurrency: int, seconds: float) -> Level:
    level = Level(endpoint, concurrency)
    stop_at = time.monotonic() + seconds

    async def worker(n: int) -> None:
        http = clients[n // WORKERS_PER_CLIENT]
        i = n
        while time.monotonic() < stop_at:  # bounded by the level's time
            i += 1
            if endpoint == "sql":
                request = http.post("/v1/sql", json={"database": "demo", "sql": SQL_QUERIES[i % len(SQL_QUERIES)]})
            else:
                request = http.post("/v1/ask", json={"database": "demo", "question": QUESTION})
            started = time.perf_counter()
            try:
                response = await request
                outcome = "200" if response.status_code == 200 else response.json().get("code", str(response.status_code))
            except (httpx.HTTPError, ValueError) as exc:
                outcome = f"client:{type(exc).__name__}"
            elapsed = (time.perf_counter() - started) * 1000
            level.outcomes[outcome] += 1
            level.latencies_all.append(elapsed)
            if outcome == "200":
                level.latencies_ok.append(elapsed)
            if outcome in BACKPRESSURE_CODES:
                await asyncio.sleep(0.01)  # a real client honours Retry-After; this one just avoids a hot spin

    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    level.seconds = time.monotonic() - wall
    level.client_cpu_s = time.process_time() - cpu
    return level


def print_table(levels: list[Level]) -> None:
    header = (f"{'endpoint':<9}{'conc':>5}{'req/s ok':>10}{'p50 ms':>9}{'p99 ms':>9}{'p50 all':>9}"
              f"{'errors':>8}{'shed':>8}{'client cpu':>11}  outcomes")
    print(header)
    print("-" * len(header))
    for lv in levels:
        print(f"{lv.endpoint:<9}{lv.concurrency:>5}{lv.ok / lv.seconds:>10.1f}{_pct(lv.latencies_ok, 0.5):>9.1f}"
              f"{_pct(lv.latencies_ok, 0.99):>9.1f}{_pct(lv.latencies_all, 0.5):>9.1f}"
              f"{lv.errors / max(lv.total, 1):>8.1%}{lv.shed / max(lv.total, 1):>8.1%}"
              f"{lv.client_cpu_s / lv.seconds:>10.2f}c  "
              + ", ".join(f"{k}={n}" for k, n in lv.outcomes.most_common()))
    for endpoint in dict.fromkeys(lv.endpoint for lv in levels):
        first = next((lv for lv in levels if lv.endpoint == endpoint and lv.shed), None)
        where = f"at concurrency {first.concurrency} ({first.shed} of {first.total} shed)" if first else "not reached"
        print(f"backpressure on {endpoint}: {where}")


async def load(base: str, levels: list[int], seconds: float) -> list[Level]:
    limits = httpx.Limits(max_connections=WORKERS_PER_CLIENT, max_keepalive_connections=WORKERS_PER_CLIENT)
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=60, limits=limits))
                   for _ in range(-(-max(levels) // WORKERS_PER_CLIENT))]
        for endpoint in ("sql", "ask"):  # warm-up: pools, statement caches, schema cache
            await run_level(clients, endpoint, 2, 1.0)
        results = []
        for concurrency in levels:
            for endpoint in ("sql", "ask"):
                level = await run_level(clients, endpoint, concurrency, seconds)
                results.append(level)
                print(f"  {endpoint:>3} x{concurrency:<4} {level.ok / level.seconds:8.1f} ok/s", flush=True)
        return results


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--levels", default="1,4,16,64,256", help="concurrency levels, comma-separated")
    ap.add_argument("--seconds", type=float, default=8.0, help="duration of each level and endpoint")
    ap.add_argument("--llm-min", type=float, default=0.3)
    ap.add_argument("--llm-max", type=float, default=0.8)
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores shared by the client, the gateway "
          "(1 uvicorn worker), Postgres and the scripted LLM")
    print("gateway limits: " + ", ".join(f"{k.removeprefix('NL2SQL_').lower()}={v}" for k, v in GATEWAY_ENV.items()))
    print(f"LLM latency uniform {args.llm_min}-{args.llm_max} s; {args.seconds:g} s per level and endpoint")
    tmp = Path(tempfile.mkdtemp(prefix="nl2sql-load-", dir="/tmp" if os.path.isdir("/tmp") else None))
    server = EmbeddedPostgres(tmp / "pg", durable=False)
    try:
        server.start()
        dsn = asyncio.run(ensure_demo_database(server.admin_dsn))
        with scripted_llm(args.llm_min, args.llm_max) as llm_url, gateway(dsn, llm_url, tmp) as base:
            results = asyncio.run(load(base, levels, args.seconds))
    finally:
        server.destroy()
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print_table(results)
    medians = [statistics.median(lv.latencies_ok) for lv in results if lv.endpoint == "sql" and lv.latencies_ok]
    if medians:
        print(f"sql p50 at the highest level / at concurrency 1: {medians[-1] / medians[0]:.1f}x")


if __name__ == "__main__":
    main()
