"""``/docs``: Swagger UI served from the package, so the API docs work offline (no CDN).

The assets come from the ``fastapi-offline`` wheel, which ships Swagger UI 5: FastAPI describes the API
in OpenAPI 3.1, which Swagger UI 4 refuses to render. Like FastAPI's own docs route, the page and its
assets are plain routes outside the API's dependencies: they need no key, and show nothing the OpenAPI
description does not already show.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

DOCS = "/docs"
ASSETS = "/docs-assets"


def install(app: FastAPI) -> None:
    """Serve Swagger UI at ``/docs`` with its JavaScript, CSS and icon from ``/docs-assets``."""
    app.mount(ASSETS, StaticFiles(directory=str(files("fastapi_offline") / "static")), name="docs-assets")

    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - API docs",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
        )

    app.add_route(DOCS, swagger_ui, include_in_schema=False)
