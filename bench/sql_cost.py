"""CPU per query of the /v1/sql execution path, Postgres's and the client's, against a direct client.

    python bench/sql_cost.py [--rounds 7] [--queries 1000] [--concurrency 4]

Starts its own embedded PostgreSQL with the demo database and runs the bench query of bench/throughput.py
(a join with GROUP BY, 17 rows), in rounds, interleaving these sides (A B C D, A B C D, ...):
  direct    an asyncpg pool (asyncpg's defaults, statement cache on) running the query in a READ ONLY
            transaction (``conn.transaction(readonly=True)`` + ``fetch``), as bench/throughput.py does;
  old       the gateway's execution pattern before named statements: a BEGIN batch with the SET LOCALs and
            a savepoint, an unnamed Parse/Describe, Bind, Execute, ROLLBACK, and the pool's reset with
            DEALLOCATE ALL (asyncpg's statement cache off) - six round trips, the text parsed and planned
            every time;
  new       :func:`gateway.execute.run_query` as ``POST /v1/sql`` calls it (with a principal): named
            statements kept per connection and principal, BEGIN/ROLLBACK batches folded with the reset,
            the first batch in the Bind round trip;
  internal  :func:`gateway.execute.run_query` without a principal (the ask pipeline's way: nothing kept).
Each side runs ``--queries`` queries from ``--concurrency`` tasks on a pool of 10 connections.
Postgres's CPU is that of the postmaster and its backends, exited ones included, read from /proc; the client's is
this process's CPU time. Both are divided by the number of queries; the table shows medians over the
rounds. The client side of ``new`` and ``internal`` includes what the gateway does with the rows (the
byte budget, JSON-ready values), which ``direct`` and ``old`` skip. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.throughput import QUERY, ROWS, tree_cpu  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import ensure_demo_database  # noqa: E402
from gateway.execute import Target, run_query  # noqa: E402
from gateway.execute.pool import RESET_SQL, create_pool  # noqa: E402
from gateway.settings import DatabaseSettings  # noqa: E402

POOL_SIZE = 10
OLD_BEGIN = ";\n".join([
    "BEGIN TRANSACTION READ ONLY", "SET LOCAL statement_timeout = 30000", "SET LOCAL lock_timeout = 1000",
    "SET LOCAL idle_in_transaction_session_timeout = 60000", "SET LOCAL standard_conforming_strings = on",
    "SAVEPOINT nl2sql_cost_gate",
])


async def _old_reset(conn: asyncpg.Connection) -> None:
    await conn.execute(RESET_SQL)


async def old_pattern(pool: asyncpg.Pool) -> int:
    conn = await pool.acquire(timeout=10)
    try:
        await conn.execute(OLD_BEGIN)
        stmt = await conn.prepare(QUERY, name=False)  # type: ignore[arg-type]
        stmt.get_attributes()
        cursor = await stmt.cursor()
        rows = await cursor.fetch(32)
        await conn.execute("ROLLBACK")
    finally:
        await pool.release(conn, timeout=10)
    return len(rows)


async def direct(pool: asyncpg.Pool) -> int:
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        return len(await conn.fetch(QUERY))


async def measure(run: Callable[[], Awaitable[int]], queries: int, concurrency: int,
                  postmaster: int) -> tuple[float, float]:
    """(Postgres CPU ms per query, client CPU ms per query)."""
    left = [queries]

    async def worker() -> None:
        while left[0] > 0:
            left[0] -= 1
            if await run() != ROWS:
                raise SystemExit("unexpected row count")

    pg0, client0 = tree_cpu(postmaster), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    pg1, client1 = tree_cpu(postmaster), time.process_time()
    return 1000 * (pg1 - pg0) / queries, 1000 * (client1 - client0) / queries


async def bench(dsn: str, postmaster: int, rounds: int, queries: int, concurrency: int) -> None:
    direct_pool = await asyncpg.create_pool(dsn, min_size=POOL_SIZE, max_size=POOL_SIZE)
    old_pool = await asyncpg.create_pool(dsn, min_size=POOL_SIZE, max_size=POOL_SIZE, statement_cache_size=0,
                                         reset=_old_reset)
    settings = DatabaseSettings(dsn=dsn, pool_max_size=POOL_SIZE, pool_min_size=POOL_SIZE)
    target = Target("demo", settings, await create_pool(settings, "demo"))
    sides: dict[str, Callable[[], Awaitable[int]]] = {
        "direct": lambda: direct(direct_pool),
        "old": lambda: old_pattern(old_pool),
        "new": lambda: _rows(run_query(target, QUERY, principal="name:bench")),
        "internal": lambda: _rows(run_query(target, QUERY)),
    }
    try:
        for run in sides.values():  # warm-up: connections, caches, the cost gate's estimate
            await measure(run, 100, concurrency, postmaster)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for r in range(rounds):
            for name, run in sides.items():
                samples[name].append(await measure(run, queries, concurrency, postmaster))
            print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    finally:
        await direct_pool.close()
        await old_pool.close()
        await target.pool.close()
    print(f"\nCPU per query, medians over {rounds} rounds of {queries} queries ({concurrency} at once)\n")
    print("| side | Postgres CPU ms/query | client CPU ms/query | total | vs direct |")
    print("|---|---|---|---|---|")
    base = sum(statistics.median(x[i] for x in samples["direct"]) for i in (0, 1))
    for name, values in samples.items():
        pg = statistics.median(v[0] for v in values)
        client = statistics.median(v[1] for v in values)
        print(f"| {name} | {pg:.3f} | {client:.3f} | {pg + client:.3f} | {(pg + client) / base:.2f}x |")


async def _rows(result: Awaitable[object]) -> int:
    return (await result).row_count  # type: ignore[attr-defined, no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nl2sql-sql-cost-"))
    server = EmbeddedPostgres(tmp / "pg", durable=False)
    server.start()
    try:
        dsn = asyncio.run(ensure_demo_database(server.admin_dsn))
        postmaster = int((tmp / "pg" / "postmaster.pid").read_text().split()[0])
        asyncio.run(bench(dsn, postmaster, args.rounds, args.queries, args.concurrency))
    finally:
        server.destroy()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
