"""An app on the demo database, driven in-process over ASGI with its real lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from gateway.api.app import create_app
from gateway.settings import DatabaseSettings, Limits, Settings


def demo_settings(demo_dsn: str, **limits: int) -> Settings:
    return Settings(
        databases={
            "demo": DatabaseSettings(dsn=demo_dsn, description="demo", limits=Limits(**limits)),
            # Nothing listens on port 1: the gateway must answer 503, never 500 or a hang.
            "down": DatabaseSettings(dsn="postgresql://nobody@127.0.0.1:1/none", pool_min_size=0,
                                     limits=Limits(acquire_timeout_s=2)),
        },
    )


@pytest.fixture(scope="module")
async def client(demo_dsn: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(demo_settings(demo_dsn, statement_timeout_ms=1500, max_rows=500, max_result_bytes=1_000_000))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield http
