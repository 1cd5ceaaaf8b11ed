"""The gateway app plus one empty POST route, the HTTP floor for bench/overhead.py.

``POST /bench/floor`` takes the same body model as ``POST /v1/sql`` and passes the same middleware and
app-level dependencies, then does nothing: (c) - (b) is what ``/v1/sql`` itself costs.
"""

from __future__ import annotations

from fastapi import FastAPI

from gateway.api.app import app_factory
from gateway.api.models import SqlRequest


def floor_app() -> FastAPI:
    app = app_factory()

    @app.post("/bench/floor", include_in_schema=False)
    async def floor(body: SqlRequest) -> dict[str, str]:
        return {"database": body.database}

    return app
