"""The gateway's memory under concurrent large results, against its configured result budget.

    python bench/memory.py [--budget-mb 256] [--rounds 4] [--concurrency 16]

Starts an embedded Postgres with the demo database and the gateway as a real uvicorn server, then sends
``--rounds`` waves of ``--concurrency`` concurrent ``POST /v1/sql`` whose results are large (about 40 MB of
text each, and one in four larger than ``max_result_bytes``, which must fail early). Reads the server's
RSS from /proc: the baseline after warm-up, the peak (VmHWM) and the settled RSS a few seconds after the
last wave. Prints one table and whether the peak stayed within budget + 150 MB. The server runs with the
Dockerfile's glibc settings unless ``--glibc-defaults``.
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
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.overhead import free_port  # noqa: E402
from bench.processes import wait_healthy  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import ensure_demo_database  # noqa: E402

MB = 1024 * 1024
# 1000 rows of 40 kB: about 40 MB of text (md5 keeps the count small enough for the static bound).
LARGE = "SELECT g, repeat(md5(g::text), 1250) AS v FROM generate_series(1, 1000) g"
# 2000 rows of 40 kB: over max_result_bytes (64 MiB), refused as soon as the limit is crossed.
TOO_LARGE = "SELECT g, repeat(md5(g::text), 1250) AS v FROM generate_series(1, 2000) g"


def rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found")


async def waves(base_url: str, rounds: int, concurrency: int) -> collections.Counter[str]:
    outcomes: collections.Counter[str] = collections.Counter()
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as http:

        async def one(i: int) -> None:
            sql = TOO_LARGE if i % 4 == 3 else LARGE
            response = await http.post("/v1/sql", json={"database": "demo", "sql": sql, "max_rows": 5000})
            code = "200" if response.status_code == 200 else f"{response.status_code} {response.json()['code']}"
            outcomes[code] += 1
            del response

        for _ in range(rounds):
            await asyncio.gather(*(one(i) for i in range(concurrency)))
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-mb", type=int, default=256, help="backpressure.result_bytes_in_flight, MiB")
    parser.add_argument("--rounds", type=int, default=4, help="waves of concurrent requests")
    parser.add_argument("--concurrency", type=int, default=16, help="requests per wave")
    parser.add_argument("--wait-s", type=float, default=5.0, help="backpressure.result_wait_s")
    parser.add_argument("--glibc-defaults", action="store_true",
                        help="run the server without the Dockerfile's MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nl2sqlbench-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        server.start()
        proc = None
        try:
            dsn = asyncio.run(ensure_demo_database(server.admin_dsn))
            port = free_port()
            env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_LOGGING__LEVEL": "WARNING",
                   "NL2SQL_AUTH__ENABLED": "false", "NL2SQL_DATABASES__DEMO__LIMITS__MAX_ROWS": "5000",
                   "NL2SQL_DATABASES__DEMO__LIMITS__STATEMENT_TIMEOUT_MS": "60000",
                   "NL2SQL_DATABASES__DEMO__POOL_MAX_SIZE": "16",
                   "NL2SQL_BACKPRESSURE__RESULT_BYTES_IN_FLIGHT": str(args.budget_mb * MB),
                   "NL2SQL_BACKPRESSURE__RESULT_WAIT_S": str(args.wait_s),
                   "NL2SQL_SERVER__REQUEST_TIMEOUT_S": "120"}
            if not args.glibc_defaults:  # as the Dockerfile sets them
                env.update(MALLOC_MMAP_THRESHOLD_="32768", MALLOC_TRIM_THRESHOLD_="131072")
            proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--factory", "bench.floor_app:floor_app", "--host", "127.0.0.1",
                 "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log",
                 "--log-level", "warning"],
                env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            base_url = f"http://127.0.0.1:{port}"
            wait_healthy(base_url)
            # Warm up: one small query, so that imports, pools and caches are in the baseline.
            httpx.post(base_url + "/v1/sql", json={"database": "demo", "sql": "SELECT 1"}, timeout=30)
            baseline = rss_kb(proc.pid, "VmRSS") / 1024
            started = time.perf_counter()
            outcomes = asyncio.run(waves(base_url, args.rounds, args.concurrency))
            elapsed = time.perf_counter() - started
            peak = rss_kb(proc.pid, "VmHWM") / 1024
            time.sleep(5)
            settled = rss_kb(proc.pid, "VmRSS") / 1024
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
            server.destroy()
    budget = args.budget_mb
    malloc = "glibc defaults" if args.glibc_defaults else "MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ as in the Dockerfile"
    print(f"{args.rounds} waves x {args.concurrency} concurrent POST /v1/sql, ~40 MB results (1 in 4 over "
          f"max_result_bytes 64 MiB), {elapsed:.1f} s; {malloc}\n")
    print(f"{'result budget (MiB)':<34}{budget:>8}")
    print(f"{'RSS baseline after warm-up (MiB)':<34}{baseline:>8.0f}")
    print(f"{'RSS peak, VmHWM (MiB)':<34}{peak:>8.0f}")
    print(f"{'RSS settled, 5 s later (MiB)':<34}{settled:>8.0f}")
    print(f"{'peak - baseline (MiB)':<34}{peak - baseline:>8.0f}")
    print(f"{'limit: budget + 150 (MiB)':<34}{budget + 150:>8}")
    print("outcomes:", ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))
    print("peak within budget + 150 MB:", "yes" if peak <= budget + 150 else "NO")


if __name__ == "__main__":
    main()
