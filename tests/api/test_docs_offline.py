"""`/docs` works offline: the page and every asset it loads come from the gateway itself, not a CDN."""

from __future__ import annotations

import re

from gateway.settings import DatabaseSettings, Settings
from tests.serving import in_process


async def test_docs_page_and_its_assets_resolve_locally(demo_dsn: str) -> None:
    async with in_process(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)})) as (http, _):
        page = await http.get("/docs")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        html = page.text
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
        assert not [a for a in assets if "//" in a], "the docs page still loads something from another host"
        assert "cdn" not in html.lower()
        assert {"/docs-assets/swagger-ui-bundle.js", "/docs-assets/swagger-ui.css"} <= set(assets)
        for asset in assets:
            answer = await http.get(asset)
            assert answer.status_code == 200, asset
            assert len(answer.content) > 500, asset
        assert (await http.get("/docs-assets/swagger-ui-bundle.js")).headers["content-type"].split(";")[0].endswith("javascript")
        openapi_url = re.search(r"""url: ['"]([^'"]+)['"]""", html)
        assert openapi_url and openapi_url.group(1) == "/openapi.json"
        assert (await http.get("/openapi.json")).json()["info"]["title"] == "nl2sql-gateway"
        assert (await http.get("/redoc")).status_code == 404  # ReDoc would need a CDN: not offered


async def test_the_api_key_scheme_is_declared_on_the_keyed_routes(demo_dsn: str) -> None:
    """The bearer dependency only declares the scheme (the middleware reads the header): Swagger UI's
    Authorize button and generated clients depend on that declaration."""
    async with in_process(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)})) as (http, _):
        spec = (await http.get("/openapi.json")).json()
    assert spec["components"]["securitySchemes"]["ApiKey"] == {
        "type": "http", "scheme": "bearer",
        "description": "An API key from `nl2sql-gateway keys create`: `Authorization: Bearer nl2sql_...`"}
    assert {"ApiKey": []} in spec["paths"]["/v1/sql"]["post"]["security"]
