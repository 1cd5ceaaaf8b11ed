"""`/docs` in headless Chromium: Swagger UI reads the gateway's OpenAPI 3.1 description and lists its
operations (a Swagger UI older than 5 shows "Unable to render this definition" instead)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import uvicorn

from gateway.api.app import create_app
from gateway.settings import DatabaseSettings, Settings
from tests.serving import free_port

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
TIMEOUT_S = 60  # a bound on the wait for a page condition; the condition decides, not the clock


def finds(driver: Any, css: str) -> list[Any]:
    return list(driver.find_elements("css selector", css))


def wait(driver: Any, condition: Callable[[Any], Any], what: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, TIMEOUT_S).until(condition, message=f"waited for {what}")


def console_errors(driver: Any) -> list[str]:
    """Errors the page logged (a failed asset, a script error): none may occur."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


@pytest.fixture(scope="module")
async def base(demo_dsn: str) -> AsyncIterator[str]:
    """The gateway on a loopback port (uvicorn in a thread), as `serve` runs it."""
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise AssertionError("the gateway did not start")
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        await asyncio.to_thread(thread.join, 30)


def test_docs_renders_the_openapi_31_description_with_its_operations(browser: Any, base: str) -> None:
    browser.get(base + "/docs")
    # Swagger UI renders one .opblock per operation once it has read /openapi.json.
    # Swagger UI 4 gives up on 3.1 with a notice (.version-pragma) instead.
    wait(browser, lambda d: finds(d, ".opblock") or finds(d, ".version-pragma"), "the operations or a refusal")
    page = browser.find_element("tag name", "body").text
    assert "Unable to render this definition" not in page
    assert finds(browser, ".version-pragma") == [] and finds(browser, ".errors-wrapper") == []
    operations = {(b.find_element("css selector", ".opblock-summary-method").text,
                   b.find_element("css selector", ".opblock-summary-path").get_attribute("data-path"))
                  for b in finds(browser, ".opblock")}
    assert {("POST", "/v1/sql"), ("POST", "/v1/ask"), ("GET", "/v1/databases"), ("POST", "/v1/check")} <= operations
    assert "OAS 3.1" in page  # the version badge Swagger UI shows beside the title
    # Every asset came from the gateway itself (offline) and nothing failed to load or run.
    sources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert sources and all(s.startswith(base) for s in sources), sources
    assert console_errors(browser) == []
