"""The gateway's memory under concurrent large results, against its configured result budget.

    python bench/memory.py [--budget-mb 256] [--rounds 4] [--concurrency 16] [--cases text,json_agg,...]

Starts an embedded Postgres with the demo database plus a wide table of its own (``bench_wide``, whose
``json_agg`` is about 37 MB), then, for each case, the gateway as a real uvicorn server (a fresh process, so
its peak is the case's own), and sends waves of ``--concurrency`` concurrent ``POST /v1/sql``:

- ``text``: ``--rounds`` waves of ~40 MB of text rows, one in four larger than ``max_result_bytes``;
- ``json_agg``: ``SELECT json_agg(t) FROM bench_wide t``, one ~37 MB JSON value each, with the default
  ``max_result_bytes`` (64 MiB; the decoded objects are larger, so refused as the bytes arrive);
- ``json_agg_served``: the same with ``max_result_bytes`` at 240 MiB, so that some are answered;
- ``wide_value``: ``SELECT string_agg(row_to_json(t)::text, ',') FROM bench_wide t``, one ~37 MB text value each.

Reads the server's RSS from /proc: the baseline after warm-up, the peak (VmHWM) and the settled RSS a few
seconds after the last wave. Prints one table and whether every peak stayed within budget + 150 MB. The
server runs with the Dockerfile's glibc settings unless ``--glibc-defaults``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.overhead import free_port  # noqa: E402
from bench.processes import wait_healthy  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import DEMO_DATABASE, READER_ROLE, derive_dsn, ensure_demo_database  # noqa: E402

MB = 1024 * 1024
# 1000 rows of 40 kB: about 40 MB of text (md5 keeps the count small enough for the static bound).
LARGE = "SELECT g, repeat(md5(g::text), 1250) AS v FROM generate_series(1, 1000) g"
# 2000 rows of 40 kB: over max_result_bytes (64 MiB), refused as soon as the limit is crossed.
TOO_LARGE = "SELECT g, repeat(md5(g::text), 1250) AS v FROM generate_series(1, 2000) g"
JSON_AGG = "SELECT json_agg(t) FROM bench_wide t"
WIDE_VALUE = "SELECT string_agg(row_to_json(t)::text, ',') FROM bench_wide t"
# A table of mixed columns whose json_agg is about 37 MB.
WIDE_ROWS = 85_000
WIDE_TABLE = f"""
DROP TABLE IF EXISTS bench_wide;
CREATE TABLE bench_wide AS
SELECT g AS id, (g * 7919) % 1000003 AS customer_id, 'customer ' || g AS name, 'user' || g || '@example.com' AS email,
       (ARRAY['Berlin', 'Paris', 'Lisbon', 'Oslo'])[1 + g % 4] AS city, round((g % 100000) / 7.0, 2) AS amount,
       timestamptz '2024-01-01' + g * interval '1 minute' AS created_at, g % 3 = 0 AS active,
       repeat(md5(g::text), 5 + g % 5) AS notes, ARRAY['a' || g % 10, 'b' || g % 7] AS tags
FROM generate_series(1, {WIDE_ROWS}) g;
ANALYZE bench_wide;
"""


@dataclass
class Case:
    name: str
    describe: str
    sql: Callable[[int], str]
    rounds: int
    max_result_mb: int | None = None  # None: the default (64 MiB)


def cases(rounds: int) -> list[Case]:
    return [
        Case("text", "~40 MB text rows (1 in 4 over max_result_bytes)", lambda i: TOO_LARGE if i % 4 == 3 else LARGE,
             rounds),
        Case("json_agg", "json_agg of a ~37 MB table, default max_result_bytes", lambda i: JSON_AGG, 2),
        Case("json_agg_served", "the same, max_result_bytes 240 MiB", lambda i: JSON_AGG, 2, 240),
        Case("wide_value", "one ~37 MB text value (string_agg)", lambda i: WIDE_VALUE, 2),
    ]


def rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found")


async def waves(base_url: str, case: Case, concurrency: int) -> collections.Counter[str]:
    outcomes: collections.Counter[str] = collections.Counter()
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits) as http:

        async def one(i: int) -> None:
            response = await http.post("/v1/sql", json={"database": "demo", "sql": case.sql(i), "max_rows": 5000})
            code = "200" if response.status_code == 200 else f"{response.json()['code']}"
            outcomes[code] += 1
            del response

        for _ in range(case.rounds):
            await asyncio.gather(*(one(i) for i in range(concurrency)))
    return outcomes


@dataclass
class Measured:
    case: Case
    baseline: float
    peak: float
    settled: float
    elapsed: float
    outcomes: collections.Counter[str]


def run_case(case: Case, dsn: str, args: argparse.Namespace) -> Measured:
    port = free_port()
    env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_LOGGING__LEVEL": "WARNING",
           "NL2SQL_AUTH__ENABLED": "false", "NL2SQL_DATABASES__DEMO__LIMITS__MAX_ROWS": "5000",
           "NL2SQL_DATABASES__DEMO__LIMITS__STATEMENT_TIMEOUT_MS": "120000",
           "NL2SQL_DATABASES__DEMO__POOL_MAX_SIZE": "16",
           "NL2SQL_BACKPRESSURE__RESULT_BYTES_IN_FLIGHT": str(args.budget_mb * MB),
           "NL2SQL_BACKPRESSURE__RESULT_WAIT_S": str(args.wait_s),
           "NL2SQL_SERVER__REQUEST_TIMEOUT_S": "300"}
    if case.max_result_mb is not None:
        env["NL2SQL_DATABASES__DEMO__LIMITS__MAX_RESULT_BYTES"] = str(case.max_result_mb * MB)
    if not args.glibc_defaults:  # as the Dockerfile sets them
        env.update(MALLOC_MMAP_THRESHOLD_="32768", MALLOC_TRIM_THRESHOLD_="131072")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "bench.floor_app:floor_app", "--host", "127.0.0.1",
         "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_healthy(base_url)
        # Warm up: one small query, so that imports, pools and caches are in the baseline.
        httpx.post(base_url + "/v1/sql", json={"database": "demo", "sql": "SELECT 1"}, timeout=30)
        baseline = rss_kb(proc.pid, "VmRSS") / 1024
        started = time.perf_counter()
        outcomes = asyncio.run(waves(base_url, case, args.concurrency))
        elapsed = time.perf_counter() - started
        peak = rss_kb(proc.pid, "VmHWM") / 1024
        time.sleep(5)
        settled = rss_kb(proc.pid, "VmRSS") / 1024
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return Measured(case, baseline, peak, settled, elapsed, outcomes)


async def prepare(admin_dsn: str) -> tuple[str, int, int]:
    """The demo database with ``bench_wide``; returns its DSN and the sizes of the two large values."""
    dsn = await ensure_demo_database(admin_dsn)
    conn = await asyncpg.connect(derive_dsn(admin_dsn, database=DEMO_DATABASE))
    try:
        await conn.execute(WIDE_TABLE + f"GRANT SELECT ON bench_wide TO {READER_ROLE};")
        json_size = await conn.fetchval("SELECT octet_length(json_agg(t)::text) FROM bench_wide t")
        text_size = await conn.fetchval("SELECT octet_length(string_agg(row_to_json(t)::text, ',')) FROM bench_wide t")
    finally:
        await conn.close()
    return dsn, json_size, text_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-mb", type=int, default=256, help="backpressure.result_bytes_in_flight, MiB")
    parser.add_argument("--rounds", type=int, default=4, help="waves of concurrent requests (text case)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests per wave")
    parser.add_argument("--wait-s", type=float, default=5.0, help="backpressure.result_wait_s")
    parser.add_argument("--cases", default="text,json_agg,json_agg_served,wide_value",
                        help="comma-separated: text, json_agg, json_agg_served, wide_value")
    parser.add_argument("--glibc-defaults", action="store_true",
                        help="run the server without the Dockerfile's MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_")
    args = parser.parse_args()
    chosen = [c for c in cases(args.rounds) if c.name in args.cases.split(",")]
    measured: list[Measured] = []
    with tempfile.TemporaryDirectory(prefix="nl2sqlbench-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        server.start()
        try:
            dsn, json_size, text_size = asyncio.run(prepare(server.admin_dsn))
            for case in chosen:
                measured.append(run_case(case, dsn, args))
        finally:
            server.destroy()
    budget = args.budget_mb
    limit = budget + 150
    malloc = "glibc defaults" if args.glibc_defaults else "MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ as in the Dockerfile"
    print(f"{args.concurrency} concurrent POST /v1/sql per wave; result budget {budget} MiB, limit budget + 150 = "
          f"{limit} MiB; json_agg {json_size / MB:.1f} MiB, wide value {text_size / MB:.1f} MiB; {malloc}\n")
    print(f"| case | waves | baseline MiB | peak MiB | peak - baseline | settled MiB | within {limit} | outcomes |")
    print("|---|---|---|---|---|---|---|---|")
    for m in measured:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(m.outcomes.items()))
        print(f"| {m.case.name}: {m.case.describe} | {m.case.rounds} | {m.baseline:.0f} | {m.peak:.0f} | "
              f"{m.peak - m.baseline:.0f} | {m.settled:.0f} | {'yes' if m.peak <= limit else 'NO'} | {outcomes} |")
    print("\nevery peak within budget + 150 MB:", "yes" if all(m.peak <= limit for m in measured) else "NO")


if __name__ == "__main__":
    main()
