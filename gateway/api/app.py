"""``create_app()``: the FastAPI application, with a lifespan that owns every resource.

The lifespan opens one pool per target database (and each capability's resources, one explicit line
each) and hands them to routes as typed state (``app.state.gateway``); nothing is opened at import time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import Depends, FastAPI

from gateway import __version__, masking, safety
from gateway.api import (
    docs,
    problems,
    routes_ask,
    routes_examples,
    routes_feedback,
    routes_guidelines,
    routes_health,
    routes_sql,
)
from gateway.api.limits import rate_limit
from gateway.api.middleware import Drain, GatewayMiddleware
from gateway.api.models import Problem
from gateway.api.problems import PROBLEM_JSON
from gateway.auth import Authenticator, check_exposure
from gateway.auth.access import authorize
from gateway.backpressure import RateLimits, Strangers
from gateway.execute import Targets
from gateway.llm import open_llm
from gateway.magic.lifespan import open_feedback_store
from gateway.observability.logging import configure_logging, get_logger
from gateway.rules import RulesRegistry
from gateway.rules.grants import report_privileges
from gateway.settings import Settings, load_settings
from gateway.state import GatewayState

log = get_logger(__name__)

DESCRIPTION = """
A read-only SQL gateway between natural-language clients and PostgreSQL.

Every error a client can cause is an `application/problem+json` body with a stable `code`
(see the Problem schema); the codes each route can return are listed in its responses.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; resources open when it starts serving and close when it stops."""
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        check_exposure(settings)  # without API keys only loopback; with them a store to keep them in
        async with AsyncExitStack() as stack:
            # Parsers build caches on first use; pay that at start-up, not on the first client's request.
            safety.check("WITH w AS (SELECT 1 AS x) SELECT count(*) FROM w JOIN w v ON v.x = w.x")
            targets = await Targets.open(settings)
            stack.push_async_callback(targets.close)
            state = GatewayState(settings=settings, targets=targets)
            app.state.gateway = state
            state.rules = RulesRegistry(settings.rules_dir)  # DBA rules, reloaded when their files change
            masking.install(state)  # database errors lose hidden names where they become gateway errors
            state.auth = Authenticator(settings.auth, lambda: state.store)  # API keys, looked up in the store
            state.rate_limits = RateLimits(settings.backpressure)  # per key (or address), in memory per replica
            # None when no endpoint is configured: /v1/ask then answers llm_not_configured
            state.llm = await stack.enter_async_context(open_llm(settings.llm))
            await stack.enter_async_context(open_feedback_store(state))  # store.dsn: feedback, guidelines, MAGIC
            await report_privileges(state)  # a role that can read hidden columns or write: log, metric, /readyz
            log.info("gateway_started", databases=sorted(targets.by_name), version=__version__)
            yield
            log.info("gateway_stopping")

    app = FastAPI(
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
    # Set by gateway.api.server on SIGTERM: answers then close their connection and new requests are refused.
    app.state.drain = Drain()
    app.add_middleware(GatewayMiddleware, max_body_bytes=settings.server.max_body_bytes,
                       max_in_flight=settings.backpressure.max_in_flight,
                       request_timeout_s=settings.server.request_timeout_s,
                       body_timeout_s=settings.server.body_timeout_s, drain=app.state.drain,
                       authenticator=lambda: getattr(getattr(app.state, "gateway", None), "auth", None),
                       strangers=Strangers(settings.backpressure))
    app.include_router(routes_sql.router)
    app.include_router(routes_ask.router)
    app.include_router(routes_feedback.router)
    app.include_router(routes_guidelines.router)
    app.include_router(routes_examples.router)
    app.include_router(routes_health.router)
    docs.install(app)
    return app


def app_factory() -> FastAPI:
    """Entry point for ``uvicorn --factory gateway.api.app:app_factory``."""
    settings = load_settings()
    configure_logging(settings.logging.level, settings.logging.json_logs)
    return create_app(settings)
