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
"""

from __future__ import annotations

import argparse
import json

from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.app import app_factory, create_app
from gateway.api.models import SqlRequest
from gateway.settings import Settings


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


def bare_app() -> Starlette:
    """Entry point for ``uvicorn --factory bench.floor_app:bare_app``."""
    return Starlette(routes=[Route("/bench/bare", _bare, methods=["POST"]),
                             Route("/healthz", lambda request: Response("{}"), methods=["GET"])])


def main() -> None:
    from gateway.observability.logging import configure_logging
    from gateway.serving import server
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
