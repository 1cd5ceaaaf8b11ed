"""The HTTP floors the benchmarks compare against.

- :func:`floor_app`: the gateway app plus one empty POST route. ``POST /bench/floor`` takes the same body
  model as ``POST /v1/sql`` and passes the same middleware and app-level dependencies, then does nothing:
  (c) - (b) is what ``/v1/sql`` itself costs (bench/overhead.py), and its throughput is what the framework
  leaves of the bare endpoint's (bench/throughput.py).
- :func:`bare_app`: a bare Starlette POST endpoint that reads and parses the same JSON body: what uvicorn and
  Starlette cost with nothing of the gateway's.

``python -m bench.floor_app [--port P] [--workers N]`` serves :func:`floor_app` the way ``nl2sql-gateway
serve`` serves the gateway (the same server, protocol, workers and drain), with settings from the
environment (``NL2SQL_...``).

``BENCH_SERVING`` serves it without the fast paths of ``gateway/serving/`` that mirror framework internals,
to measure what they are worth: ``public-routes`` turns off the compiled routes and the ``__call__``
shortcut (FastAPI routes every request, as when ``serving/compat.py`` finds an internal missing);
``public`` also serves with uvicorn's own httptools protocol instead of the bounded one (public APIs only;
the header timeout is then not enforced).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.app import app_factory, create_app
from gateway.api.models import SqlRequest
from gateway.serving import app as serving_app
from gateway.serving import compat, server
from gateway.settings import Settings

SERVING = os.environ.get("BENCH_SERVING", "")


def _public_paths(which: str) -> None:
    """Turn off the fast paths for this process (workers import this module too, so they do the same)."""
    if which not in ("public-routes", "public"):
        raise SystemExit(f"BENCH_SERVING={which!r}: expected public-routes or public")
    def off() -> str | None:
        return f"BENCH_SERVING={which}"

    def uvicorns_own(settings: Settings) -> type[server.BoundedHttpProtocol] | str:
        return "httptools"

    compat._fastpath_missing = off  # read once, on the first route compiled
    setattr(serving_app, "telemetry_switch_missing", functools.cache(off))  # noqa: B010 - imported by name there
    if which == "public":
        server.bounded_protocol = uvicorns_own


if SERVING:
    _public_paths(SERVING)


def with_floor(app: FastAPI) -> FastAPI:
    @app.post("/bench/floor", include_in_schema=False)
    async def floor(body: SqlRequest) -> dict[str, str]:
        return {"database": body.database}

    return app


def floor_app() -> FastAPI:
    """Entry point for ``uvicorn --factory bench.floor_app:floor_app`` (settings from the environment)."""
    return with_floor(app_factory())


def floor_app_for(settings: Settings) -> FastAPI:
    """The same, built from given settings: the app factory ``serve`` calls in each worker."""
    return with_floor(create_app(settings))


async def _bare(request: Request) -> Response:
    body = json.loads(await request.body())
    return Response(json.dumps({"database": body["database"]}), media_type="application/json")


def composed_app() -> Starlette:
    """Entry point for ``uvicorn --factory bench.floor_app:composed_app``: the bare endpoint and the direct
    query composed in one process, with nothing of the gateway. ``POST /bench/composed`` reads the same body,
    runs the benchmark's own query (bench/throughput.py's ``QUERY``, never SQL from the body: this endpoint has
    none of the gateway's checks) on an asyncpg pool of the direct side's size in a READ ONLY transaction, as
    the direct floor does, and answers the rows as JSON (orjson). The database is
    ``NL2SQL_DATABASES__DEMO__DSN``."""
    import asyncpg
    import orjson

    from bench.throughput import POOL_SIZE, QUERY

    dsn = os.environ["NL2SQL_DATABASES__DEMO__DSN"]
    pools: list[asyncpg.Pool] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        pools.append(await asyncpg.create_pool(dsn, min_size=POOL_SIZE, max_size=POOL_SIZE))
        yield
        await pools[0].close()

    async def composed(request: Request) -> Response:
        body = json.loads(await request.body())
        async with pools[0].acquire() as conn, conn.transaction(readonly=True):
            records = await conn.fetch(QUERY)
        rows = [list(r) for r in records]
        # orjson, as the gateway writes its answers: the floor is the cheapest way to do the same work
        return Response(orjson.dumps({"database": body["database"], "rows": rows, "row_count": len(rows)},
                                     default=str), media_type="application/json")

    return Starlette(routes=[Route("/bench/composed", composed, methods=["POST"]),
                             Route("/healthz", lambda request: Response("{}"), methods=["GET"])],
                     lifespan=lifespan)


def bare_app() -> Starlette:
    """Entry point for ``uvicorn --factory bench.floor_app:bare_app``."""
    return Starlette(routes=[Route("/bench/bare", _bare, methods=["POST"]),
                             Route("/healthz", lambda request: Response("{}"), methods=["GET"])])


def main() -> None:
    from gateway.observability.logging import configure_logging
    from gateway.settings import load_settings

    parser = argparse.ArgumentParser(description="Serve the gateway with the /bench/floor route.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    settings = load_settings()
    settings.server.host, settings.server.port = "127.0.0.1", args.port
    configure_logging(settings.logging.level, settings.logging.json_logs)
    server.serve(settings, floor_app_for, workers=args.workers)


if __name__ == "__main__":
    main()
