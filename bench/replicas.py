"""Shared limits across replicas: how exact a global limit is, and what the shared limiter adds to /v1/sql.

    python bench/replicas.py [--rate 30] [--clients 16] [--seconds 5] [--rounds 400]

Starts an embedded Postgres (demo database and a store database), then in one run:
  (1) accuracy: three ``serve`` processes behind HAProxy (round robin), the client role limited to
      ``--rate`` requests/s (burst 5), ``--clients`` clients sending ``SELECT 1`` to /v1/sql as fast as they
      can for ``--seconds`` (they must ask well above the limit, or the ratio measures the clients); once with the limits in the store (``backpressure.shared``), once per process (the old
      behaviour). Ratio = admitted / (rate x elapsed + burst): 1.0 is exact, 3.0 is three replicas each
      admitting the whole rate.
  (2) latency: two single ``serve`` processes on the same store, one with shared limits and one with
      per-process limits (a limit far above what is sent, so nothing is refused: leases of
      ``rate x shared_lease_s`` tokens), the same /v1/sql request sent to each in turn, ``--rounds`` times;
      p50 and p99 of each and the difference of the p50s (target: 0.1 ms or less).
The client runs on the same machine as the servers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.auth.keys import Role, new_token  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import derive_dsn, ensure_demo_database  # noqa: E402
from gateway.settings import StoreSettings  # noqa: E402
from gateway.store import Store, api_keys  # noqa: E402
from tests.replicas.cluster import cluster  # noqa: E402

BURST = 5


async def make_store(admin_dsn: str) -> tuple[str, str]:
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute("CREATE DATABASE nl2sql_bench_store")
    finally:
        await conn.close()
    dsn = derive_dsn(admin_dsn, database="nl2sql_bench_store")
    store = await Store.open(StoreSettings(dsn=dsn))
    try:
        token = new_token()
        await api_keys.create(store.pool, key_id=token.key_id, name="bench", role=Role.CLIENT.value,
                              databases=["*"], pg_role=None, secret_sha256=token.secret_sha256)
    finally:
        await store.close()
    return dsn, token.token


def env(demo: str, store: str, *, shared: bool, rate: float, burst: int) -> dict[str, str]:
    return {"NL2SQL_DATABASES__DEMO__DSN": demo, "NL2SQL_STORE__DSN": store, "NL2SQL_AUTH__ENABLED": "true",
            "NL2SQL_MAGIC__SCHEDULE": "false", "NL2SQL_LOGGING__LEVEL": "WARNING",
            "NL2SQL_BACKPRESSURE__SHARED": "true" if shared else "false",
            "NL2SQL_BACKPRESSURE__ROLES": json.dumps({"client": {"rate_per_s": rate, "burst": burst}})}


async def hammer(url: str, token: str, seconds: float, clients: int = 8) -> tuple[int, int, float]:
    statuses: list[int] = []
    headers = {"Authorization": f"Bearer {token}"}

    async def one(http: httpx.AsyncClient, stop: float) -> None:
        while time.monotonic() < stop:
            r = await http.post(url + "/v1/sql", headers=headers, json={"database": "demo", "sql": "SELECT 1"})
            statuses.append(r.status_code)

    async with httpx.AsyncClient(timeout=30) as http:
        started = time.monotonic()
        await asyncio.gather(*(one(http, started + seconds) for _ in range(clients)))
        elapsed = time.monotonic() - started
    return statuses.count(200), statuses.count(429), elapsed


async def latencies(urls: list[str], token: str, rounds: int) -> list[list[float]]:
    headers = {"Authorization": f"Bearer {token}"}
    body = {"database": "demo", "sql": "SELECT customer_id, city FROM customers WHERE customer_id = 42"}
    samples: list[list[float]] = [[] for _ in urls]
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(20):  # warm-up: connections, caches, the first lease
            for url in urls:
                await http.post(url + "/v1/sql", headers=headers, json=body)
        for _ in range(rounds):
            for i, url in enumerate(urls):
                started = time.perf_counter()
                r = await http.post(url + "/v1/sql", headers=headers, json=body)
                samples[i].append((time.perf_counter() - started) * 1000)
                assert r.status_code == 200, r.text
    return samples


def p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=30.0, help="the global limit, requests/s")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=5.0, help="how long the clients send")
    parser.add_argument("--rounds", type=int, default=400, help="latency samples per side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nl2sqlbench-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pg", durable=False)
        server.start()
        try:
            demo = asyncio.run(ensure_demo_database(server.admin_dsn))
            store, token = asyncio.run(make_store(server.admin_dsn))
            print(f"Three replicas behind HAProxy, limit {args.rate:g}/s (burst {BURST}), {args.clients} clients, "
                  f"{args.seconds:g} s\n")
            print("| limits | asked/s | admitted | refused | elapsed s | admitted/s | ratio to the limit |")
            print("| --- | --- | --- | --- | --- | --- | --- |")
            for shared in (True, False):
                with cluster(env(demo, store, shared=shared, rate=args.rate, burst=BURST)) as three:
                    if not shared:  # a fresh key: the shared run's bucket is not this run's
                        token2 = asyncio.run(make_key(store))
                    admitted, refused, elapsed = asyncio.run(
                        hammer(three.base_url, token if shared else token2, args.seconds, args.clients))
                ratio = admitted / (args.rate * elapsed + BURST)
                asked = (admitted + refused) / elapsed
                print(f"| {'shared (store)' if shared else 'per process'} | {asked:.0f} | {admitted} | {refused} | "
                      f"{elapsed:.2f} | {admitted / elapsed:.1f} | {ratio:.3f} |")
            rate = 10_000.0  # nothing refused; leases of rate x shared_lease_s (0.05 s) = 500 tokens
            with cluster(env(demo, store, shared=True, rate=rate, burst=1000), count=1) as a, \
                    cluster(env(demo, store, shared=False, rate=rate, burst=1000), count=1) as b:
                shared_ms, local_ms = asyncio.run(
                    latencies([a.replicas[0].base_url, b.replicas[0].base_url], token, args.rounds))
            print(f"\n/v1/sql point lookup, {args.rounds} interleaved rounds, ms (leases of 500 tokens)\n")
            print("| limiter | p50 | p99 | mean |")
            print("| --- | --- | --- | --- |")
            for name, values in (("per process", local_ms), ("shared (store)", shared_ms)):
                print(f"| {name} | {p(values, 0.5):.3f} | {p(values, 0.99):.3f} | {statistics.fmean(values):.3f} |")
            print(f"\np50 added by the shared limiter: {p(shared_ms, 0.5) - p(local_ms, 0.5):+.3f} ms")
        finally:
            server.destroy()


async def make_key(store_dsn: str) -> str:
    store = await Store.open(StoreSettings(dsn=store_dsn), apply_migrations=False)
    try:
        token = new_token()
        await api_keys.create(store.pool, key_id=token.key_id, name=f"bench-{token.key_id}", role=Role.CLIENT.value,
                              databases=["*"], pg_role=None, secret_sha256=token.secret_sha256)
        return token.token
    finally:
        await store.close()


if __name__ == "__main__":
    main()
