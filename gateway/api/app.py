"""``create_app()``: the FastAPI application, an HTTP adapter over :class:`gateway.service.Gateway`.

The lifespan opens the Gateway (pools, store, LLM client, rules, caches) and hands it to routes as typed
state (``app.state.service``; the server plumbing's resources on ``app.state.gateway``); nothing is opened at
import time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from gateway.api import (
    console,
    docs,
    problems,
    routes_access,
    routes_ask,
    routes_examples,
    routes_feedback,
    routes_guidelines,
    routes_health,
    routes_history,
    routes_resource,
    routes_rules,
    routes_sql,
    routes_templates,
)
from gateway.api.limits import rate_limit
from gateway.api.models import Problem
from gateway.api.problems import PROBLEM_JSON
from gateway.auth import check_exposure
from gateway.auth.access import authorize
from gateway.config.version import __version__
from gateway.mcp.http import McpEndpoint
from gateway.observability import metrics
from gateway.observability.logging import configure_logging
from gateway.service import Gateway
from gateway.serving.admission import Drain, GatewayMiddleware
from gateway.serving.app import GatewayApp
from gateway.serving.backpressure import Strangers
from gateway.serving.banner import print_banner
from gateway.serving.fastpath import FastRoutes
from gateway.settings import Settings, load_settings

DESCRIPTION = """
A read-only SQL gateway between natural-language clients and PostgreSQL.

Every error a client can cause is an `application/problem+json` body with a stable `code`
(see the Problem schema); the codes each route can return are listed in its responses.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; resources open when it starts serving and close when it stops."""
    settings = settings or load_settings()
    mcp = McpEndpoint(settings)  # MCP over streamable HTTP at /mcp, an adapter over the same Gateway

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        check_exposure(settings)  # without API keys only loopback; with them a store to keep them in
        async with Gateway(settings) as gw, mcp.run():
            app.state.service = gw  # routes and the MCP endpoint are adapters over it
            serving = gw.serving_state()  # the server plumbing's (authenticating middleware, fast paths)
            app.state.gateway = serving
            refresher = None
            if metrics.multiprocess_dir() is None:  # one process: its banner (workers: the supervisor's)
                print_banner(settings, serving.privileges.latest)
            if metrics.multiprocess_dir() is not None:  # a worker of serve --workers N
                refresher = asyncio.create_task(metrics.refresh_pools(serving.targets.by_name.values()))
            try:
                yield
            finally:
                if refresher is not None:
                    refresher.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await refresher

    app = GatewayApp(
        title="nl2sql-gateway",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None, redoc_url=None,  # /docs is served from local assets below (gateway.api.docs)
        # Problems are sent as application/problem+json: document that media type for every status a route
        # does not list itself (schemathesis checks that each answer's Content-Type is documented).
        responses={"default": {"description": "Problem", "model": Problem, "content": {
            PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}}},
        # every route: its role from gateway.auth.access (deny by default), then the key's rate limit
        dependencies=[Depends(authorize), Depends(rate_limit)],
    )
    problems.install(app)
    # Set by gateway.serving.server on SIGTERM: answers then close their connection and new requests are refused.
    app.state.drain = Drain()
    # The hot POST routes served without FastAPI's per-request routing (gateway.serving.fastpath); tests turn it off
    # (app.state.fast_routes.enabled = False) to compare the two paths.
    app.state.fast_routes = FastRoutes()
    app.add_middleware(GatewayMiddleware, max_body_bytes=settings.server.max_body_bytes,
                       max_in_flight=settings.backpressure.max_in_flight,
                       max_in_flight_per_key=settings.backpressure.max_in_flight_per_key,
                       request_timeout_s=settings.server.request_timeout_s,
                       body_timeout_s=settings.server.body_timeout_s, drain=app.state.drain,
                       authenticator=lambda: getattr(getattr(app.state, "gateway", None), "auth", None),
                       strangers=Strangers(settings.backpressure), fast=app.state.fast_routes)
    app.include_router(routes_sql.router)
    app.include_router(routes_ask.router)
    app.include_router(routes_feedback.router)
    app.include_router(routes_guidelines.router)
    app.include_router(routes_examples.router)
    app.include_router(routes_templates.router)
    app.include_router(routes_health.router)
    app.include_router(routes_access.router)
    app.include_router(routes_resource.router)  # OAuth metadata for MCP connectors ([auth.oidc])
    app.include_router(routes_rules.router)
    app.include_router(routes_history.router)
    app.router.routes.append(mcp.route)
    docs.install(app)
    console.install(app)  # /console: the web console, a client of the routes above
    return app


def app_factory() -> FastAPI:
    """Entry point for ``uvicorn --factory gateway.api.app:app_factory``."""
    settings = load_settings()
    configure_logging(settings.logging.level, settings.logging.json_logs)
    return create_app(settings)
