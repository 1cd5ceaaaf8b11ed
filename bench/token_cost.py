"""What end-user tokens cost: the OIDC validator alone, and /v1/sql with a token against /v1/sql with an API key.

    python bench/token_cost.py [--samples 20000] [--rounds 5] [--duration 3] [--concurrency 16]

1. The validator (gateway.auth.oidc.OidcValidator) called directly, with its JWKS cache warm, against the
   test authorization server (gateway.testing.authserver) on loopback: median per call over batches of 100
   calls of a full check (header, key lookup, signature, claims, principal; token cache off), for RS256 and
   ES256, and of the validated-token cache path (one SHA-256 and a dict lookup). Target: <= 0.05 ms.
2. Throughput of ``POST /v1/sql`` (bench/throughput.py's BI query) on one gateway process with auth on, the
   store and ``[auth.oidc]`` configured: the same run interleaves an API key and an RS256 access token
   (default caches: the key's lookup and the token's principal are cached), wrk -t1 with bench/throughput.py's
   helpers. Target: the token side within 5% of the key side (median of the per-round ratios).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
# bench/ itself off the path: bench/mcp.py would shadow the mcp SDK the test authorization server uses.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.throughput import BODY, process, wrk  # noqa: E402
from gateway.auth.oidc import OidcValidator  # noqa: E402
from gateway.settings import OidcSettings  # noqa: E402
from gateway.testing.authserver import AuthServer  # noqa: E402

BATCH = 100


async def per_call_ms(validator: OidcValidator, token: str, samples: int) -> tuple[float, float]:
    """Median and p99 milliseconds per call, over batches of BATCH calls."""
    for _ in range(BATCH):  # warm: JWKS fetched, code paths hot
        await validator.authenticate(token)
    batches = []
    for _ in range(max(1, samples // BATCH)):
        started = time.perf_counter()
        for _ in range(BATCH):
            await validator.authenticate(token)
        batches.append((time.perf_counter() - started) * 1000 / BATCH)
    batches.sort()
    return statistics.median(batches), batches[min(len(batches) - 1, int(len(batches) * 0.99))]


async def validator_costs(idp: AuthServer, samples: int) -> list[tuple[str, float, float]]:
    settings = OidcSettings(issuer=idp.issuer, audience=idp.audience, jwks_url=idp.jwks_url,
                            policy_claims={"tenant_id": "tenant_id"}, token_cache_ttl_s=0)
    full = OidcValidator(settings)
    cached = OidcValidator(settings.model_copy(update={"token_cache_ttl_s": 3600}))
    try:
        rs = idp.mint("alice", ttl_s=3600)
        es = idp.mint("alice", alg="ES256", ttl_s=3600)
        return [("full check, RS256 (2048-bit)", *await per_call_ms(full, rs, samples)),
                ("full check, ES256 (P-256)", *await per_call_ms(full, es, samples)),
                ("validated-token cache hit", *await per_call_ms(cached, rs, samples))]
    finally:
        await full.aclose()
        await cached.aclose()


def lua(directory: Path, name: str, token: str) -> Path:
    path = directory / f"{name}.lua"
    path.write_text('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                    f'wrk.headers["Authorization"] = "Bearer {token}"\nwrk.body = {json.dumps(BODY)}\n')
    return path


def throughput(idp: AuthServer, rounds: int, duration: int, concurrency: int) -> list[tuple[float, float]]:
    """(key req/s, token req/s) per round, interleaved."""
    from gateway.demo.embedded import EmbeddedPostgres
    from gateway.demo.generator import derive_dsn, ensure_demo_database

    tmp = Path(tempfile.mkdtemp(prefix="nl2sql-token-"))
    server = EmbeddedPostgres(tmp / "pg", durable=False)
    server.start()
    try:
        dsn = asyncio.run(ensure_demo_database(server.admin_dsn))
        asyncio.run(_create_database(server.admin_dsn, "bench_store"))
        env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_AUTH__ENABLED": "true",
               "NL2SQL_STORE__DSN": derive_dsn(server.admin_dsn, database="bench_store"),
               "NL2SQL_AUTH__OIDC__ISSUER": idp.issuer, "NL2SQL_AUTH__OIDC__AUDIENCE": idp.audience,
               "NL2SQL_AUTH__OIDC__JWKS_URL": idp.jwks_url, "NL2SQL_AUTH__OIDC__DATABASES": '["demo"]',
               "NL2SQL_LOGGING__LEVEL": "INFO", "NL2SQL_MAGIC__SCHEDULE": "false"}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        env.pop("NL2SQL_CONFIG", None)
        python = sys.executable
        with process([python, "-m", "bench.floor_app", "--workers", "1"], env, "/healthz") as (base, _):
            key = subprocess.run([python, "-m", "gateway", "keys", "create", "--name", "bench", "--role", "client",
                                  "--databases", "demo"], env=env, cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.strip().splitlines()[-1]
            token = idp.mint("alice", ttl_s=3600)
            for name, credential in (("key", key), ("token", token)):  # one request each: say why, if refused
                answer = httpx.post(base + "/v1/sql", content=BODY, timeout=10, headers={
                    "Authorization": f"Bearer {credential}", "Content-Type": "application/json"})
                if answer.status_code != 200:
                    raise SystemExit(f"{name}: {answer.status_code} {answer.text}")
            scripts = {"key": lua(tmp, "key", key), "token": lua(tmp, "token", token)}
            for script in scripts.values():  # warm-up: pools, caches, the JWKS
                wrk(base + "/v1/sql", concurrency, 1, script)
            results = []
            for r in range(rounds):
                key_rate, _ = wrk(base + "/v1/sql", concurrency, duration, scripts["key"])
                token_rate, _ = wrk(base + "/v1/sql", concurrency, duration, scripts["token"])
                results.append((key_rate, token_rate))
                print(f"round {r + 1}/{rounds}: key {key_rate:.0f} req/s, token {token_rate:.0f} req/s",
                      file=sys.stderr)
            return results
    finally:
        server.destroy()
        shutil.rmtree(tmp, ignore_errors=True)


async def _create_database(admin_dsn: str, name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_dsn)
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20_000, help="validator calls per row")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=int, default=3, help="seconds per wrk run")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--validator-only", action="store_true", help="skip the wrk throughput part")
    args = parser.parse_args()
    if not args.validator_only and shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk); or run with --validator-only")
    with AuthServer() as idp:
        costs = asyncio.run(validator_costs(idp, args.samples))
        rates = [] if args.validator_only else throughput(idp, args.rounds, args.duration, args.concurrency)
    print(f"\nvalidator, direct calls, warm JWKS; batches of {BATCH}; {os.cpu_count()} cores (target <= 0.05 ms)\n")
    print(f"| {'path':<32} | median ms | p99 ms |")
    print(f"|{'-' * 34}|-----------|--------|")
    for name, median, p99 in costs:
        print(f"| {name:<32} | {median:9.4f} | {p99:6.4f} |")
    if rates:
        ratios = [token / key for key, token in rates]
        print(f"\nPOST /v1/sql, 1 process, wrk -t1 -c{args.concurrency}, {len(rates)} interleaved rounds of "
              f"{args.duration} s (target: token within 5% of key)\n")
        print("| side | median req/s |\n|---|---|")
        print(f"| API key | {statistics.median(k for k, _ in rates):.0f} |")
        print(f"| OIDC access token (RS256) | {statistics.median(t for _, t in rates):.0f} |")
        print(f"| token / key (median of per-round ratios) | {statistics.median(ratios):.3f} |")


if __name__ == "__main__":
    main()
