"""What MCP adds to ``POST /v1/sql``: ``run_sql`` over streamable HTTP on the same query, in one interleaved run.

    python bench/mcp.py [--rounds 200]
    python bench/mcp.py --transcript      # a stdio session: initialize, tools/list, one run_sql call

Starts an embedded Postgres with the demo database and the gateway as a real uvicorn server (uvloop,
httptools) on loopback, then for each query interleaves, round after round:
  (a) ``POST /v1/sql`` with httpx (the HTTP API, keep-alive),
  (r) ``POST /mcp`` with a raw JSON-RPC ``tools/call run_sql`` body (httpx, the 2025-06-18 protocol, stateless,
      SSE response parsed): what the server adds, without any client library,
  (m) ``run_sql`` through the SDK's own client (``mcp.Client`` over ``streamable_http_client``, one
      connection for the whole run): what an agent built on the SDK sees.
The same ``max_rows`` (100) on every side. Prints medians and p99 in ms, r - a, r/a, m - a and m/a.
The client runs in this process on the same two cores as the server.

``--transcript`` instead spawns ``python -m gateway mcp`` on the demo database and prints the JSON-RPC lines
exchanged on its stdin and stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
# Run as a script, this file's folder comes first on the path, where this file would shadow the `mcp` SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.processes import wait_healthy  # noqa: E402
from gateway.demo.embedded import EmbeddedPostgres  # noqa: E402
from gateway.demo.generator import ensure_demo_database  # noqa: E402

QUERIES = {
    "point lookup": "SELECT customer_id, first_name, last_name, city, country FROM customers WHERE customer_id = 42",
    "revenue by region": (
        "SELECT r.name, sum(o.total_amount) AS revenue FROM orders o "
        "JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id "
        "WHERE o.status <> 'cancelled' GROUP BY r.name ORDER BY revenue DESC"),
    "100 rows": "SELECT order_id, customer_id, ordered_at, status, total_amount FROM orders ORDER BY order_id LIMIT 100",
}
MAX_ROWS = 100
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-06-18"}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sse_result(text: str) -> dict[str, Any]:
    """The JSON-RPC response in an SSE body (the last ``data:`` line that carries a result)."""
    for line in reversed(text.splitlines()):
        if line.startswith("data:"):
            message: dict[str, Any] = json.loads(line[5:])
            if "result" in message or "error" in message:
                return message
    raise AssertionError(f"no JSON-RPC response in {text!r}")


async def measure(base_url: str, rounds: int) -> list[tuple[str, dict[str, list[float]]]]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    results = []
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http, \
            create_mcp_http_client() as mcp_http, \
            Client(streamable_http_client(base_url + "/mcp", http_client=mcp_http), mode="legacy") as client:
        for name, sql in QUERIES.items():
            samples: dict[str, list[float]] = {"a": [], "r": [], "m": []}
            body = {"database": "demo", "sql": sql, "max_rows": MAX_ROWS}
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "run_sql", "arguments": body}}
            for i in range(rounds + 20):  # the first 20 rounds warm caches and pools
                t0 = time.perf_counter()
                response = await http.post("/v1/sql", json=body)
                t1 = time.perf_counter()
                raw = await http.post("/mcp", json=call, headers=MCP_HEADERS)
                t2 = time.perf_counter()
                result = await client.call_tool("run_sql", body)
                t3 = time.perf_counter()
                assert response.status_code == 200, response.text
                assert raw.status_code == 200 and not sse_result(raw.text)["result"].get("isError"), raw.text
                assert not result.is_error, result
                rows = response.json()["rows"]
                assert sse_result(raw.text)["result"]["structuredContent"]["rows"] == rows
                assert result.structured_content["rows"] == rows
                if i >= 20:
                    for key, value in zip("arm", (t1 - t0, t2 - t1, t3 - t2), strict=True):
                        samples[key].append(value * 1000)
            results.append((name, samples))
    return results


def report(results: list[tuple[str, dict[str, list[float]]]]) -> None:
    header = (f"{'query':<20}{'/v1/sql a':>10}{'a p99':>8}{'raw MCP r':>10}{'r p99':>8}{'SDK MCP m':>10}"
              f"{'m p99':>8}{'r-a':>8}{'r/a':>7}{'m-a':>8}{'m/a':>7}")
    print(header)
    print("-" * len(header))
    all_r, all_m = [], []
    for name, s in results:
        a, r, m = (statistics.median(s[k]) for k in "arm")
        dr = [ri - ai for ai, ri in zip(s["a"], s["r"], strict=True)]
        dm = [mi - ai for ai, mi in zip(s["a"], s["m"], strict=True)]
        all_r += dr
        all_m += dm
        print(f"{name:<20}{a:>10.3f}{pct(s['a'], 0.99):>8.3f}{r:>10.3f}{pct(s['r'], 0.99):>8.3f}{m:>10.3f}"
              f"{pct(s['m'], 0.99):>8.3f}{statistics.median(dr):>8.3f}{r / a:>7.2f}{statistics.median(dm):>8.3f}"
              f"{m / a:>7.2f}")
    print("-" * len(header))
    print(f"all queries: MCP over streamable HTTP adds (r - a) median {statistics.median(all_r):.3f} ms, "
          f"p99 {pct(all_r, 0.99):.3f} ms with a raw client; (m - a) median {statistics.median(all_m):.3f} ms, "
          f"p99 {pct(all_m, 0.99):.3f} ms through the SDK's client")


def demo_database() -> tuple[EmbeddedPostgres, str, tempfile.TemporaryDirectory[str]]:
    tmp = tempfile.TemporaryDirectory(prefix="nl2sqlbench-")
    server = EmbeddedPostgres(Path(tmp.name) / "pg", durable=False)
    server.start()
    return server, asyncio.run(ensure_demo_database(server.admin_dsn)), tmp


def bench(rounds: int) -> None:
    server, dsn, tmp = demo_database()
    proc = None
    log = (Path(tmp.name) / "gateway.log").open("w")  # printed when the gateway fails to start
    try:
        port = free_port()
        # Loopback only, so access control may be off (with it on, a cached key costs a dict lookup per side).
        env = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": dsn, "NL2SQL_LOGGING__LEVEL": "WARNING",
               "NL2SQL_AUTH__ENABLED": "false", "NL2SQL_RULES_DIR": str(ROOT / "rules")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "gateway.api.app:app_factory", "--host", "127.0.0.1",
             "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log",
             "--log-level", "warning"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log,
        )
        base_url = f"http://127.0.0.1:{port}"
        wait_healthy(base_url, timeout_s=90)
        print(f"{rounds} interleaved rounds per query, max_rows {MAX_ROWS}; times in ms; 2-core shared machine\n")
        report(asyncio.run(measure(base_url, rounds)))
    except SystemExit:
        print((Path(tmp.name) / "gateway.log").read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        log.close()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        server.destroy()
        tmp.cleanup()


def transcript() -> None:
    """A stdio session with ``nl2sql-gateway mcp``: every line written to its stdin and read from its stdout."""
    server, dsn, tmp = demo_database()
    try:
        config = Path(tmp.name) / "nl2sql-gateway.toml"
        config.write_text(f'rules_dir = "{ROOT / "rules"}"\n[auth]\nenabled = false\n[databases.demo]\ndsn = "{dsn}"\n',
                          encoding="utf-8")
        proc = subprocess.Popen([sys.executable, "-m", "gateway", "mcp", "--config", str(config)], cwd=ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdin is not None and proc.stdout is not None
        print(f"$ nl2sql-gateway mcp --config {config.name}   (-> client to server, <- server to client)\n")

        def send(message: dict[str, Any]) -> None:
            line = json.dumps(message)
            print("->", line)
            proc.stdin.write(line + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]

        def receive() -> dict[str, Any]:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            print("<-", line.rstrip())
            answer: dict[str, Any] = json.loads(line)
            return answer

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "transcript", "version": "1"}}})
        receive()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        receive()
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "run_sql", "arguments": {
            "database": "demo", "sql": "SELECT name, code FROM regions ORDER BY name LIMIT 3"}}})
        receive()
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        server.destroy()
        tmp.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200, help="samples per query and side")
    parser.add_argument("--transcript", action="store_true", help="print a stdio session instead of measuring")
    args = parser.parse_args()
    if args.transcript:
        transcript()
    else:
        bench(args.rounds)


if __name__ == "__main__":
    main()
