"""``POST /v1/ask``: the gateway's own time per attempt, and whether concurrent questions serialize.

    python bench/ask.py [--questions 300] [--concurrent 200] [--llm-delay 1.0] [--rounds 3] [--slow-only]
                        [--store] [--distinct]

Starts an embedded PostgreSQL in a temporary directory with the demo database, a scripted
OpenAI-compatible LLM on loopback, and the app in-process (its real lifespan; the LLM is reached over real
HTTP through the openai SDK).

1. Zero-latency LLM. Questions alternate between one that passes at once (one attempt) and one whose
   first SQL fails and is fixed by a reflection (two attempts). Per attempt, the gateway's own time is
   ``total_ms - llm_ms - db_ms - acquire_ms`` from the attempt's timings: prompt building, SQL extraction,
   the safety check, validation and bookkeeping. In the same run, interleaved, each question's final SQL
   also goes through ``POST /v1/sql`` (the floor without any LLM or context work).
2. Slow LLM (``--llm-delay`` seconds per call). Rounds interleave (a) N concurrent chat completions straight
   through the openai SDK (the floor: what the LLM server and the client stack cost at that concurrency),
   (b) the context stage alone for N concurrent questions and (c) N concurrent one-attempt questions
   through ``POST /v1/ask``. If nothing serializes, (c) takes about one LLM delay plus the CPU that N
   questions need, most of which (b) shows to be the context stage. The ``cpu`` column is this process's
   CPU seconds for the step (client, gateway and SDK; not the LLM server's or PostgreSQL's): when the wall
   is about one LLM delay plus that, the path is CPU-bound, not waiting on a limit. ``--slow-only`` runs
   only this part.

``--store``: with the gateway's store (``store.dsn``, a second database on the same server), so every
answer is also audited and starts a conversation, as a deployment with a store does. ``--distinct``: the
concurrent questions differ (each asks about another status, so its SQL text differs too) instead of one
question asked N times, so that nothing keyed by the question or SQL text is reused within a round.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import httpx2
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` as a package, run as a script
from bench.processes import in_own_process  # noqa: E402
from gateway.api.app import create_app
from gateway.context import build_context
from gateway.demo.embedded import EmbeddedPostgres
from gateway.demo.generator import ensure_demo_database
from gateway.observability.logging import configure_logging
from gateway.pipeline import prompts
from gateway.settings import AskPolicy, DatabaseSettings, Limits, LLMSettings, Settings, StoreSettings
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM

PASSING = ("How many orders were not cancelled?", "SELECT count(*) AS orders FROM orders WHERE status <> 'cancelled'")
FIXED = ("What is the revenue per region?",
         "SELECT r.name AS region, sum(o.total_amount) AS revenue FROM orders o JOIN customers c ON "
         "c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id WHERE o.status <> "
         "'cancelled' GROUP BY r.name ORDER BY revenue DESC")
BROKEN = FIXED[1].replace("r.region_id = c.region_id", "r.id = c.region_id")  # fails: no column r.id


# The app serves on loopback only here: no API keys (when the gateway has access control at all).
LOCAL_ONLY: dict[str, Any] = {"auth": {"enabled": False}} if "auth" in Settings.model_fields else {}


def distinct_question(i: int) -> str:
    """The i-th of ``--distinct``'s questions: one that passes at once, each with its own SQL text."""
    return f"How many orders were not cancelled? (variant {i})"


def _answer(delay_s: float):  # type: ignore[no-untyped-def]
    def answer(request: LLMRequest) -> Reply:
        user = request.last_user
        if request.system == prompts.REFLECT_SYSTEM:
            text = FIXED[1]
        elif "(variant " in user:  # --distinct: the same count, another SQL text per variant
            variant = user.split("(variant ", 1)[1].split(")", 1)[0]
            text = f"{PASSING[1]} AND order_id > -{int(variant) + 1}"
        elif PASSING[0] in user:
            text = PASSING[1]
        else:
            text = BROKEN
        return Reply(f"<sql>{text}</sql>", delay_s=delay_s)

    return answer


def _serve_llm(delay_s: float, conn: multiprocessing.connection.Connection) -> None:
    llm = ScriptedLLM().start()
    llm.add(_answer(delay_s))
    conn.send(llm.base_url)
    conn.recv()  # until told to stop
    llm.stop()


def scripted_llm(delay_s: float) -> AbstractContextManager[str]:
    """A scripted LLM in its own process (it must not compete with the gateway for the GIL)."""
    return in_own_process(_serve_llm, delay_s)


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _settings(dsn: str, llm_url: str, tmp: Path, store_dsn: str | None = None) -> Settings:
    (tmp / "rules").mkdir(exist_ok=True)
    (tmp / "guidelines").mkdir(exist_ok=True)
    (tmp / "guidelines" / "default.md").write_text("1. Check every literal against the stored values.\n")
    return Settings(
        # The pool wait is bounded generously: part 2 measures whether questions serialize, not the pool.
        databases={"demo": DatabaseSettings(dsn=dsn, pool_max_size=20, ask=AskPolicy(time_budget_s=60),
                                            limits=Limits(acquire_timeout_s=60))},
        llm=LLMSettings(base_url=llm_url, model="scripted", timeout_s=30, max_retries=2, max_concurrency=512),
        rules_dir=tmp / "rules", guidelines_dir=tmp / "guidelines",
        store=StoreSettings(dsn=store_dsn),
        **LOCAL_ONLY,
    )


async def _attempt_overhead(http: httpx.AsyncClient, questions: int) -> None:
    own: list[float] = []
    check: list[float] = []
    ask_wall: list[float] = []
    sql_wall: list[float] = []
    attempts_seen = 0
    for i in range(questions):
        question, final_sql = PASSING if i % 2 == 0 else FIXED
        t0 = time.perf_counter()
        response = await http.post("/v1/ask", json={"question": question, "database": "demo"})
        t1 = time.perf_counter()
        answer = response.json()
        assert response.status_code == 200 and answer["status"] == "ok", answer
        t2 = time.perf_counter()
        floor = await http.post("/v1/sql", json={"database": "demo", "sql": final_sql})
        t3 = time.perf_counter()
        assert floor.status_code == 200
        if i < 10:
            continue  # warm-up: schema cache, prepared statements, pools
        ask_wall.append((t1 - t0) * 1e3)
        sql_wall.append((t3 - t2) * 1e3)
        for attempt in answer["attempts"]:
            t = attempt["timings"]
            own.append(t["total_ms"] - t["llm_ms"] - t["db_ms"] - t.get("acquire_ms", 0.0))
            check.append(t["check_ms"])
            attempts_seen += 1
    rows = [("attempt: gateway's own time (total - llm - db)", own),
            ("attempt: of which the safety check", check),
            ("question: POST /v1/ask wall (1 or 2 attempts)", ask_wall),
            ("floor: POST /v1/sql wall, same final SQL", sql_wall)]
    print(f"\n1. zero-latency LLM: {len(ask_wall)} questions, {attempts_seen} attempts (times in ms)")
    print(f"{'what':<50} {'median':>8} {'p99':>8}")
    print("-" * 68)
    for name, samples in rows:
        med, p99 = _stats(samples)
        print(f"{name:<50} {med:>8.3f} {p99:>8.3f}")
    print(f"{'ratio: ask wall / sql wall (medians)':<50} {_stats(ask_wall)[0] / _stats(sql_wall)[0]:>8.2f}")


async def _concurrency(http: httpx.AsyncClient, llm_url: str, n: int, delay: float, rounds: int,
                       distinct: bool = False) -> None:
    # The floor's pool keeps all n connections open between rounds, as the gateway's does (gateway/llm/client.py).
    pool = openai.DefaultAsyncHttpx2Client(limits=httpx2.Limits(max_connections=n, max_keepalive_connections=n))
    direct = openai.AsyncOpenAI(base_url=llm_url, api_key="not-needed", max_retries=2, timeout=60, http_client=pool)
    state = http._transport.app.state.gateway  # type: ignore[attr-defined]
    message = [{"role": "user", "content": PASSING[0]}]

    cpu: dict[str, list[float]] = {"floor": [], "questions": [], "contexts": []}

    async def floor() -> float:
        c0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(direct.chat.completions.create(model="scripted", messages=message)  # type: ignore[arg-type]
                               for _ in range(n)))
        cpu["floor"].append(time.process_time() - c0)
        return time.perf_counter() - t0

    asked = [0]  # --distinct: every round asks new variants

    async def questions() -> float:
        c0, t0 = time.process_time(), time.perf_counter()
        texts = [distinct_question(asked[0] + i) if distinct else PASSING[0] for i in range(n)]
        asked[0] += n
        responses = await asyncio.gather(*(http.post("/v1/ask", json={"question": text, "database": "demo"})
                                           for text in texts))
        wall = time.perf_counter() - t0
        cpu["questions"].append(time.process_time() - c0)
        bad = [r.text for r in responses if r.status_code != 200 or r.json()["status"] != "ok"]
        assert not bad, bad[:3]
        return wall

    async def contexts() -> float:  # the context stage alone (schema pruning, value matching): CPU and DB
        c0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(build_context(state, state.settings.context, state.target("demo"), state.ruleset("demo"),
                                               PASSING[0], None) for _ in range(n)))
        cpu["contexts"].append(time.process_time() - c0)
        return time.perf_counter() - t0

    await questions()  # warm-up: pools, schema cache, statement caches
    for spent in cpu.values():
        spent.clear()
    floors: list[float] = []
    ctx_walls: list[float] = []
    walls: list[float] = []
    for _ in range(rounds):
        floors.append(await floor())
        ctx_walls.append(await contexts())
        walls.append(await questions())
    await direct.close()
    f, w, c = statistics.median(floors), statistics.median(walls), statistics.median(ctx_walls)
    kind = "distinct" if distinct else "identical"
    print(f"\n2. {n} concurrent {kind} questions, LLM takes {delay:.2f} s per call, {rounds} interleaved rounds "
          "(seconds)")
    # cpu: this process's CPU seconds (client, gateway, SDK; not the LLM server's nor PostgreSQL's)
    print(f"{'what':<50} {'median':>8} {'max':>8} {'cpu':>8}")
    print("-" * 77)
    print(f"{'floor: ' + str(n) + ' concurrent direct LLM calls (SDK)':<50} {f:>8.3f} {max(floors):>8.3f} "
          f"{statistics.median(cpu['floor']):>8.3f}")
    print(f"{'context stage alone x ' + str(n) + ' concurrent':<50} {c:>8.3f} {max(ctx_walls):>8.3f} "
          f"{statistics.median(cpu['contexts']):>8.3f}")
    print(f"{'POST /v1/ask x ' + str(n) + ' concurrent, wall':<50} {w:>8.3f} {max(walls):>8.3f} "
          f"{statistics.median(cpu['questions']):>8.3f}")
    print(f"{'ratio: ask wall / LLM delay':<50} {w / delay:>8.2f}")
    print(f"{'ratio: ask wall / floor':<50} {w / f:>8.2f}")
    print(f"{'ratio: ask wall / (floor + context alone)':<50} {w / (f + c):>8.2f}")
    print(f"{'serialized would take':<50} {n * delay:>8.1f}")


@asynccontextmanager
async def _client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=120) as http:
            yield http


async def _main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="nl2sql-bench-", dir="/tmp" if os.path.isdir("/tmp") else None))
    server = EmbeddedPostgres(tmp / "pg", durable=False)
    try:
        server.start()
        dsn = await ensure_demo_database(server.admin_dsn)
        store_dsn = None
        if args.store:
            admin = await asyncpg.connect(server.admin_dsn)
            try:
                await admin.execute("CREATE DATABASE nl2sql_bench_store")
            finally:
                await admin.close()
            store_dsn = server.dsn("nl2sql_bench_store")
        if not args.slow_only:
            with scripted_llm(0.0) as llm_url:
                async with _client(_settings(dsn, llm_url, tmp, store_dsn)) as http:
                    await _attempt_overhead(http, args.questions)
        with scripted_llm(args.llm_delay) as llm_url:
            async with _client(_settings(dsn, llm_url, tmp, store_dsn)) as http:
                await _concurrency(http, llm_url, args.concurrent, args.llm_delay, args.rounds, args.distinct)
    finally:
        server.destroy()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--concurrent", type=int, default=200)
    ap.add_argument("--llm-delay", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--slow-only", action="store_true", help="only part 2 (concurrent questions, slow LLM)")
    ap.add_argument("--store", action="store_true",
                    help="with the gateway's store: answers audited, conversations recorded")
    ap.add_argument("--distinct", action="store_true",
                    help="part 2 asks N different questions (different SQL texts), not one question N times")
    args = ap.parse_args()
    configure_logging("WARNING", json_logs=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; client, gateway and scripted LLM share them")
    asyncio.run(_main(args))


if __name__ == "__main__":
    main()
