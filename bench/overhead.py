"""What the gateway costs on top of Postgres, measured in one interleaved run (see shared benchmarks notes).

    python bench/overhead.py [--rounds 200]

Starts an embedded Postgres with the demo database and the gateway as a real uvicorn server (uvloop,
httptools) on loopback, then for each typical BI query interleaves, round after round:
  (a) direct asyncpg: the same SQL in a read-only transaction on a warm connection,
  (b) the HTTP floor: an empty POST route of the same app taking the same body (bench/floor_app.py:
      middleware, routing, dependencies, body parsing; no work),
  (c) POST /v1/sql with the same SQL,
and times (s) the safety check alone in-process and (g) the cost gate alone (``EXPLAIN (FORMAT JSON)`` of
the same SQL in a read-only transaction on the direct connection, plus reading the plan) next to its floor,
(r) a ``SELECT 1`` round trip in the same transaction. Prints medians and p99 in ms, the gateway's own work
(c - b - a), c/a and c - a. The client runs in this process on the same two cores as the server.
By default each query repeats (as dashboards do), so the gateway's verdict cache and asyncpg's statement
cache help; ``--unique`` makes every statement new, the cost of one-off SQL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.processes import wait_healthy  # noqa: E402
from gateway import safety  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import ensure_demo_database  # noqa: E402
from gateway.execute import cost  # noqa: E402

QUERIES = {
    "point lookup": "SELECT customer_id, first_name, last_name, city, country FROM customers WHERE customer_id = 42",
    "revenue by region": (
        "SELECT r.name, sum(o.total_amount) AS revenue FROM orders o "
        "JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id "
        "WHERE o.status <> 'cancelled' GROUP BY r.name ORDER BY revenue DESC"),
    "top products (CTE)": (
        "WITH sales AS (SELECT product_id, sum(quantity) AS units FROM order_items GROUP BY product_id) "
        "SELECT p.name, s.units FROM sales s JOIN products p ON p.product_id = s.product_id "
        "ORDER BY s.units DESC LIMIT 10"),
    "monthly orders (window)": (
        "SELECT date_trunc('month', ordered_at) AS month, count(*) AS orders, "
        "sum(count(*)) OVER (ORDER BY date_trunc('month', ordered_at)) AS running "
        "FROM orders GROUP BY 1 ORDER BY 1"),
    "status filter count": "SELECT count(*) FILTER (WHERE status = 'cancelled') AS cancelled, count(*) FROM orders",
    "events json": (
        "SELECT payload->>'page' AS page, count(*) FROM events WHERE event_type = 'page_view' "
        "GROUP BY 1 ORDER BY 2 DESC LIMIT 5"),
    "100 rows": "SELECT order_id, customer_id, ordered_at, status, total_amount FROM orders ORDER BY order_id LIMIT 100",
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def measure(dsn: str, base_url: str, rounds: int, unique: bool) -> list[tuple[str, dict[str, list[float]]]]:
    conn = await asyncpg.connect(dsn)
    results = []
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        for name, sql in QUERIES.items():
            samples: dict[str, list[float]] = {"s": [], "a": [], "b": [], "c": [], "g": [], "r": []}
            body = {"database": "demo", "sql": sql}
            for i in range(rounds + 20):  # the first 20 rounds warm caches and pools
                if unique:  # a new text each round: no verdict or statement cache can help either side
                    sql = f"{QUERIES[name]} /* round {i} */"
                    body = {"database": "demo", "sql": sql}
                t0 = time.perf_counter()
                safety.check(sql)
                t1 = time.perf_counter()
                async with conn.transaction(readonly=True):
                    await conn.fetch(sql)
                t2 = time.perf_counter()
                floor = await http.post("/bench/floor", json=body)
                t3 = time.perf_counter()
                response = await http.post("/v1/sql", json=body)
                t4 = time.perf_counter()
                assert floor.status_code == 200 and response.status_code == 200, response.text
                async with conn.transaction(readonly=True):  # (g) the cost gate alone, uncached; (r) its floor
                    t5 = time.perf_counter()
                    await conn.fetchval("SELECT 1")
                    t6 = time.perf_counter()
                    await cost.estimate(conn, sql)
                    t7 = time.perf_counter()
                if i >= 20:
                    samples["r"].append((t6 - t5) * 1000)
                    samples["g"].append((t7 - t6) * 1000)
                    for key, value in zip("sabc", (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                        samples[key].append(value * 1000)
            results.append((name, samples))
    await conn.close()
    return results


def report(results: list[tuple[str, dict[str, list[float]]]]) -> None:
    header = (f"{'query':<24}{'check p50':>10}{'check p99':>10}{'asyncpg a':>10}{'floor b':>9}"
              f"{'/v1/sql c':>10}{'c p99':>8}{'own c-b-a':>10}{'c-a':>8}{'c/a':>7}{'gate p50':>9}{'gate p99':>9}")
    print(header)
    print("-" * len(header))
    all_s, own, deltas, gates, rtts, planning = [], [], [], [], [], []
    for name, s in results:
        a, b, c = (statistics.median(s[k]) for k in "abc")
        own_work = [ci - bi - ai for ai, bi, ci in zip(s["a"], s["b"], s["c"], strict=True)]
        delta = [ci - ai for ai, ci in zip(s["a"], s["c"], strict=True)]
        all_s += s["s"]
        gates += s["g"]
        rtts += s["r"]
        planning += [g - r for g, r in zip(s["g"], s["r"], strict=True)]
        own += own_work
        deltas += delta
        print(f"{name:<24}{statistics.median(s['s']):>10.3f}{pct(s['s'], 0.99):>10.3f}{a:>10.3f}{b:>9.3f}"
              f"{c:>10.3f}{pct(s['c'], 0.99):>8.3f}{statistics.median(own_work):>10.3f}"
              f"{statistics.median(delta):>8.3f}{c / a:>7.2f}{statistics.median(s['g']):>9.3f}{pct(s['g'], 0.99):>9.3f}")
    print("-" * len(header))
    print(f"all queries: safety check median {statistics.median(all_s):.3f} ms, p99 {pct(all_s, 0.99):.3f} ms; "
          f"gateway's own work (c-b-a) median {statistics.median(own):.3f} ms; "
          f"c-a median {statistics.median(deltas):.3f} ms")
    print(f"cost gate uncached (EXPLAIN (FORMAT JSON) in the query's transaction, (g)): median "
          f"{statistics.median(gates):.3f} ms, p99 {pct(gates, 0.99):.3f} ms; SELECT 1 round trip in the same "
          f"transaction (r) median {statistics.median(rtts):.3f} ms; g - r median {statistics.median(planning):.3f} ms. "
          "In c the gate's estimate is cached per statement for 60 s (repeated statements pay it once).")
    print("sqlglotc compiled:", getattr(__import__("sqlglot.tokens").tokens, "SQLGLOTC_INSTALLED", "unknown"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200, help="samples per query and side")
    parser.add_argument("--unique", action="store_true",
                        help="make every statement new (a round-number comment): measures one-off SQL, with no "
                        "help from the gateway's verdict cache or asyncpg's statement cache on either side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nl2sqlbench-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        server.start()
        proc = None
        try:
            dsn = asyncio.run(ensure_demo_database(server.admin_dsn))
            port = free_port()
            # Loopback only, so access control may be off (with it on, a cached key costs a dict lookup).
            env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_LOGGING__LEVEL": "INFO",
                   "NL2SQL_AUTH__ENABLED": "false"}
            proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--factory", "bench.floor_app:floor_app", "--host", "127.0.0.1",
                 "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log",
                 "--log-level", "warning"],
                env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            base_url = f"http://127.0.0.1:{port}"
            wait_healthy(base_url)
            mode = "every statement new (--unique)" if args.unique else "repeated statements (dashboards)"
            print(f"{args.rounds} interleaved rounds per query, {mode}; times in ms; 2-core shared machine\n")
            report(asyncio.run(measure(dsn, base_url, args.rounds, args.unique)))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
            server.destroy()


if __name__ == "__main__":
    main()
