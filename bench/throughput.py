"""Throughput of the gateway against its floors, all in one run, driven by ``wrk`` (a C client).

    python bench/throughput.py [--rounds 5] [--duration 3] [--concurrency 16 64] [--baseline DIR]

Starts an embedded PostgreSQL with the demo database, then these servers on loopback, each in its own
process(es):
  bare    a bare Starlette POST endpoint under uvicorn (bench/floor_app.py:bare_app), the same JSON body;
  no-op   the gateway's own empty POST route, same middleware, dependencies and body model
          (bench/floor_app.py, served as ``serve`` serves: one process);
  sql     ``POST /v1/sql`` on that same process: a BI query (a join with GROUP BY, 17 rows);
  sql 2w  ``POST /v1/sql`` on the same app served by 2 worker processes (``serve --workers 2``);
  public-routes, public   with ``--public``: ``POST /v1/sql`` on one process without the fast paths that
          mirror framework internals (FastAPI routes every request; ``public`` also runs uvicorn's own
          httptools protocol): what ``gateway/serving/`` is worth, in the same run;
  composed  the bare endpoint running the direct side's query (bench/floor_app.py:composed_app): bare HTTP
          and the query composed in one process under uvicorn, with nothing of the gateway, to show what
          the floor formula leaves out when both share one process;
  base    with ``--baseline DIR`` (a checkout of another commit, e.g. ``git archive main | tar -x -C DIR``):
          ``POST /v1/sql`` on one process served from that tree, for before/after in the same run;
and a direct asyncpg pool (10 connections, asyncpg's defaults, its own process) running the same query in a
READ ONLY transaction, as many at once as wrk has connections. Sides are interleaved round by round (A B A B
...), each concurrency in turn; every wrk run uses one thread and a Lua script for the POST body, and any
non-2xx answer aborts the benchmark. Prints medians over the rounds and the same-run ratios (medians of the
per-round ratios): no-op / bare, sql / floor with floor = 1 / (1/bare + 1/direct) (bare HTTP plus the query),
composed / floor and sql / composed, and 2 workers / 1 worker. Access control is off (loopback); the request log line goes to /dev/null.

A second table gives the CPU each request cost, per side and concurrency (medians over the rounds), read from
/proc around every run: the serving process(es) (for workers, the supervisor and its children; for the direct
side, the asyncpg client process), Postgres (the postmaster, its live backends, and backends it reaped), and
the load generator (wrk, as this process's reaped children). On two shared cores throughput moves with
whatever else runs; CPU per request moves far less, and says which part a change made cheaper.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.processes import wait_healthy  # noqa: E402

DATABASE = "demo"
# A BI query: products joined to their categories, grouped by category and whether discontinued (17 rows).
QUERY = ("SELECT cat.name AS category, p.is_discontinued, count(*) AS products, avg(p.list_price) AS avg_price "
         "FROM products p JOIN categories cat ON cat.category_id = p.category_id "
         "GROUP BY cat.name, p.is_discontinued ORDER BY cat.name, p.is_discontinued")
ROWS = 17
BODY = json.dumps({"database": DATABASE, "sql": QUERY})
POOL_SIZE = 10  # the gateway's default pool_max_size


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # the process ended between the listing and the read
        return None
    return raw[raw.rindex(")") + 2:].split()  # fields from the state on: the name may hold spaces


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its descendants, live ones and those already reaped (cutime, cstime)."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            stats[int(entry.name)] = fields
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if (fields := stats.get(pid)) is None:
            continue
        utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
        total += utime + stime + cutime + cstime
        todo.extend(children.get(pid, []))
    return total / TICK


def reaped_children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def process(args: list[str], env: dict[str, str], health: str, cwd: Path = ROOT) -> Iterator[tuple[str, int]]:
    port = free_port()
    proc = subprocess.Popen([*args, "--port", str(port)], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, 60) if health == "/healthz" else None
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def wrk(url: str, connections: int, duration: float, script: Path) -> tuple[float, int]:
    """Requests per second and the number of requests answered."""
    out = subprocess.run(["wrk", "-t1", "--timeout", "20s", f"-c{connections}", f"-d{max(1, round(duration))}s", "-s", str(script), url],
                         capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:  # a refusal or a timeout is no throughput
        raise SystemExit(f"wrk saw errors against {url}:\n{out}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    if rate is None or count is None:
        raise SystemExit(f"no throughput in wrk's output:\n{out}")
    return float(rate.group(1)), int(count.group(1))


class Cpu:
    """CPU per request of one run, split by who spent it (milliseconds)."""

    def __init__(self, server: int, postmaster: int) -> None:
        self.server, self.postmaster = server, postmaster

    def measure(self, run: Callable[[], tuple[float, int]]) -> tuple[float, tuple[float, float, float]]:
        before = (tree_cpu(self.server), tree_cpu(self.postmaster), reaped_children_cpu())
        rate, count = run()
        after = (tree_cpu(self.server), tree_cpu(self.postmaster), reaped_children_cpu())
        server, pg, load = (1000 * (a - b) / max(count, 1) for a, b in zip(after, before, strict=True))
        return rate, (server, pg, load)


def _direct_worker(dsn: str, conn: Connection) -> None:
    """Runs in its own process: on ("run", concurrency, seconds) answer (queries per second, queries)."""
    import asyncpg

    async def burst(pool: asyncpg.Pool, concurrency: int, seconds: float) -> tuple[float, int]:
        count = 0
        until = time.perf_counter() + seconds

        async def client() -> None:
            nonlocal count
            while time.perf_counter() < until:
                async with pool.acquire() as c, c.transaction(readonly=True):
                    rows = await c.fetch(QUERY)
                assert len(rows) == ROWS, len(rows)
                count += 1

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return count / (time.perf_counter() - started), count

    async def main() -> None:
        pool = await asyncpg.create_pool(dsn, min_size=POOL_SIZE, max_size=POOL_SIZE)
        conn.send("ready")
        loop = asyncio.get_running_loop()
        while True:
            message = await loop.run_in_executor(None, conn.recv)
            if message == "stop":
                break
            _, concurrency, seconds = message
            conn.send(await burst(pool, concurrency, seconds))
        await pool.close()

    import uvloop

    uvloop.run(main())


class Direct:
    def __init__(self, conn: Connection, pid: int) -> None:
        self.conn, self.pid = conn, pid

    def run(self, concurrency: int, seconds: float) -> tuple[float, int]:
        self.conn.send(("run", concurrency, seconds))
        rate, count = self.conn.recv()
        return float(rate), int(count)


@contextmanager
def direct_client(dsn: str) -> Iterator[Direct]:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_direct_worker, args=(dsn, child), daemon=True)
    proc.start()
    try:
        assert parent.recv() == "ready"
        assert proc.pid is not None
        yield Direct(parent, proc.pid)
    finally:
        parent.send("stop")
        proc.join(timeout=10)


def uvicorn(python: str, factory: str) -> list[str]:
    """Plain uvicorn (uvloop, httptools, no access log) serving ``bench.floor_app:<factory>`` on loopback."""
    return [python, "-m", "uvicorn", "--factory", f"bench.floor_app:{factory}", "--host", "127.0.0.1",
            "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"]


def lua_script(directory: Path) -> Path:
    path = directory / "post.lua"
    path.write_text('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                    f"wrk.body = {json.dumps(BODY)}\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=int, default=3, help="seconds per wrk run")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--only", nargs="+", default=None, help="measure only these sides (e.g. noop sql)")
    parser.add_argument("--public", action="store_true",
                        help="also serve /v1/sql without the fast paths that mirror framework internals "
                             "(BENCH_SERVING in bench/floor_app.py): 'public-routes' and 'public'")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a source tree of another commit: its /v1/sql on one process is measured as 'base'")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")

    from gateway.demo.embedded import EmbeddedPostgres
    from gateway.demo.generator import ensure_demo_database

    tmp = Path(tempfile.mkdtemp(prefix="nl2sql-throughput-"))
    server = EmbeddedPostgres(tmp / "pg", durable=False)
    server.start()
    try:
        dsn = asyncio.run(ensure_demo_database(server.admin_dsn))
        env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_AUTH__ENABLED": "false",
               "NL2SQL_LOGGING__LEVEL": "INFO"}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        env.pop("NL2SQL_CONFIG", None)
        script = lua_script(tmp)
        python = sys.executable
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        with ExitStack() as stack:
            bare, bare_pid = stack.enter_context(process(uvicorn(python, "bare_app"), env, "/healthz"))
            composed, composed_pid = stack.enter_context(process(uvicorn(python, "composed_app"), env, "/healthz"))
            one, one_pid = stack.enter_context(process([python, "-m", "bench.floor_app", "--workers", "1"], env,
                                                       "/healthz"))
            two, two_pid = stack.enter_context(process([python, "-m", "bench.floor_app", "--workers", "2"], env,
                                                       "/healthz"))
            base = base_pid = None
            if args.baseline is not None:
                tree = args.baseline.resolve()
                base, base_pid = stack.enter_context(process(
                    [python, "-m", "bench.floor_app", "--workers", "1"],
                    {**env, "PYTHONPATH": str(tree)}, "/healthz", cwd=tree))
            public: dict[str, tuple[str, int]] = {}
            if args.public:
                for which in ("public-routes", "public"):
                    public[which] = stack.enter_context(process(
                        [python, "-m", "bench.floor_app", "--workers", "1"], {**env, "BENCH_SERVING": which},
                        "/healthz"))
            direct = stack.enter_context(direct_client(dsn))
            sides: dict[str, tuple[int, Callable[[int, float], tuple[float, int]]]] = {
                "bare": (bare_pid, lambda c, d: wrk(bare + "/bench/bare", c, d, script)),
                "noop": (one_pid, lambda c, d: wrk(one + "/bench/floor", c, d, script)),
                "sql": (one_pid, lambda c, d: wrk(one + "/v1/sql", c, d, script)),
                "sql2w": (two_pid, lambda c, d: wrk(two + "/v1/sql", c, d, script)),
                "direct": (direct.pid, direct.run),
                "composed": (composed_pid, lambda c, d: wrk(composed + "/bench/composed", c, d, script)),
            }
            if base is not None and base_pid is not None:
                sides["base"] = (base_pid, lambda c, d: wrk(base + "/v1/sql", c, d, script))
            for which, (url, pid) in public.items():
                sides[which] = (pid, lambda c, d, url=url: wrk(url + "/v1/sql", c, d, script))  # type: ignore[misc]
            if args.only:
                sides = {k: v for k, v in sides.items() if k in args.only}
            for _, side in sides.values():  # warm-up: pools, caches, both workers
                side(max(args.concurrency), 1.0)
            samples: dict[tuple[str, int], list[float]] = {}
            cpu: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
            for r in range(args.rounds):
                for c in args.concurrency:
                    for name, (pid, side) in sides.items():
                        rate, split = Cpu(pid, postmaster).measure(lambda: side(c, args.duration))  # noqa: B023
                        samples.setdefault((name, c), []).append(rate)
                        cpu.setdefault((name, c), []).append(split)
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        report(samples, args.concurrency, args.rounds)
        report_cpu(cpu, args.concurrency)
    finally:
        server.destroy()
        shutil.rmtree(tmp, ignore_errors=True)


LABELS = {
    "bare": "bare Starlette POST endpoint (uvicorn)",
    "noop": "gateway no-op POST (/bench/floor), 1 process",
    "sql": "POST /v1/sql, 1 process",
    "sql2w": "POST /v1/sql, 2 workers",
    "base": "POST /v1/sql, 1 process, --baseline tree",
    "public-routes": "POST /v1/sql, 1 process, FastAPI's own routing",
    "public": "POST /v1/sql, 1 process, public APIs only",
    "direct": "direct asyncpg pool, READ ONLY transaction",
    "composed": "bare endpoint + direct query composed, 1 process (uvicorn)",
}


def report(samples: dict[tuple[str, int], list[float]], concurrencies: list[int], rounds: int) -> None:
    print(f"\n{rounds} interleaved rounds, wrk -t1; medians; {os.cpu_count()} cores shared by client, server "
          "and database\n")
    def cells(name: str, c: int) -> list[str]:
        value = statistics.median(samples[(name, c)])
        return [f"{value:,.0f}", f"{1000 / value:.3f} ms"]

    _table(["req/s", "per request"], samples, concurrencies, cells)
    print()

    def ratio(label: str, num: str, den: str | None, floor: bool = False) -> None:
        parts = []
        for c in concurrencies:
            if (num, c) not in samples or (den is not None and (den, c) not in samples):
                return
            if floor:
                if ("bare", c) not in samples or ("direct", c) not in samples:
                    return
                per_round = [s / (1 / (1 / b + 1 / d)) for s, b, d in
                             zip(samples[(num, c)], samples[("bare", c)], samples[("direct", c)], strict=True)]
            else:
                per_round = [n / d for n, d in zip(samples[(num, c)], samples[(den, c)], strict=True)]  # type: ignore[index]
            parts.append(f"c={c}: {statistics.median(per_round):.2f}")
        print(f"- {label}: {', '.join(parts)}")

    ratio("no-op / bare", "noop", "bare")
    ratio("/v1/sql (1 process) / floor, floor = 1/(1/bare + 1/direct)", "sql", None, floor=True)
    ratio("/v1/sql 2 workers / 1 process", "sql2w", "sql")
    ratio("/v1/sql (1 process) / direct", "sql", "direct")
    ratio("bare + direct composed in one process / floor", "composed", None, floor=True)
    ratio("/v1/sql (1 process) / bare + direct composed in one process", "sql", "composed")
    ratio("/v1/sql (1 process) / baseline tree's (1 process)", "sql", "base")
    ratio("baseline tree's /v1/sql / floor", "base", None, floor=True)
    ratio("/v1/sql with FastAPI's own routing / with the fast paths", "public-routes", "sql")
    ratio("/v1/sql with public APIs only / with the fast paths", "public", "sql")


def report_cpu(cpu: dict[tuple[str, int], list[tuple[float, float, float]]], concurrencies: list[int]) -> None:
    print("\nCPU per request, ms (medians): the serving process(es) (for direct: the asyncpg client), Postgres, "
          "the load generator (wrk)\n")
    def cells(name: str, c: int) -> list[str]:
        server, pg, load = (statistics.median(v[i] for v in cpu[(name, c)]) for i in range(3))
        return [f"{server:.3f}", f"{pg:.3f}", "-" if name == "direct" else f"{load:.3f}"]

    _table(["server", "Postgres", "wrk"], cpu, concurrencies, cells)
    print()
    for num, den, label in (("sql2w", "sql", "server CPU per /v1/sql request, 2 workers / 1 process"),
                            ("sql", "base", "server CPU per /v1/sql request, this tree / baseline tree"),
                            ("public-routes", "sql", "server CPU per /v1/sql request, FastAPI's own routing / "
                             "fast paths"),
                            ("public", "sql", "server CPU per /v1/sql request, public APIs only / fast paths")):
        if all((num, c) in cpu and (den, c) in cpu for c in concurrencies):
            parts = [f"c={c}: {statistics.median(n[0] / d[0] for n, d in zip(cpu[(num, c)], cpu[(den, c)], strict=True)):.2f}"
                     for c in concurrencies]
            print(f"- {label} (median of the per-round ratios): {', '.join(parts)}")


def _table(columns: list[str], samples: dict[tuple[str, int], Any], concurrencies: list[int],
           cells: Callable[[str, int], list[str]]) -> None:
    """A markdown table: a row per side measured, ``columns`` per concurrency."""
    print("| side | " + " | ".join(f"c={c} {' | '.join(columns)}" for c in concurrencies) + " |")
    print("|---|" + "---|" * len(columns) * len(concurrencies))
    for name in sorted({n for n, _ in samples}, key=list(LABELS).index):
        print(f"| {LABELS[name]} | " + " | ".join(" | ".join(cells(name, c)) for c in concurrencies) + " |")


if __name__ == "__main__":
    main()
