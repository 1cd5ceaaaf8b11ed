"""MCP Apps: `run_sql` and `ask` link to a `ui://` answer view that MCP Apps clients render (a table and a
chart); the tool results stay what every other client gets. The view is read over MCP like any resource, and
a headless Chromium plays the host: it frames the view and hands it a real `ask` result."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from mcp import types
from mcp.client import advertise

from gateway.mcp.apps import ANSWER_URI, APP_MIME_TYPE, EXTENSION_ID
from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import script, sql
from tests.console.conftest import browser  # noqa: F401 - one headless Chromium for the module
from tests.mcp_server.conftest import Served, http_client

APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})  # what an MCP Apps host declares
BY_REGION = ("SELECT r.name AS region, count(*) AS orders FROM orders o JOIN customers c USING (customer_id) "
             "JOIN regions r ON r.region_id = c.region_id GROUP BY r.name ORDER BY r.name")


def without_ids(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "request_id"}


async def test_ask_and_run_sql_link_to_the_answer_view(http_gw: Served, llm: ScriptedLLM) -> None:
    token = await http_gw.key("client", ("demo",))
    answers: list[types.CallToolResult] = []
    for extensions in ([APPS], None):  # an MCP Apps host, then a client that knows nothing of it
        script(llm, sql(BY_REGION))
        async with http_client(http_gw.url, token, extensions=extensions) as client:
            assert (client.server_capabilities.extensions or {}).get(EXTENSION_ID) == {}
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["ask"].meta == tools["run_sql"].meta == {"ui": {"resourceUri": ANSWER_URI}}
            assert tools["check_sql"].meta is None
            answers.append(await client.call_tool("ask", {"database": "demo", "question": "Orders per region?"}))
            view = await client.read_resource(ANSWER_URI)
    with_view, plain = answers
    assert not with_view.is_error and with_view.structured_content["status"] == "ok"
    # the result is the same for both clients: the view is only a link
    assert without_ids(with_view.structured_content) == without_ids(plain.structured_content)
    assert [type(c) for c in with_view.content] == [types.TextContent] == [type(c) for c in plain.content]
    [content] = view.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == APP_MIME_TYPE and content.uri == ANSWER_URI
    html = content.text
    assert html.lstrip().startswith("<!DOCTYPE html>") and "ui/notifications/tool-result" in html
    # self-contained: nothing is loaded from anywhere (the SVG namespace is a name, not a fetch)
    assert not re.search(r"""(src|href)\s*=|@import|url\(|<link""", html, re.IGNORECASE)
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}
    assert "innerHTML" not in html and "insertAdjacentHTML" not in html  # rows are set as text only
    assert content.meta == {"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}}


HOST = """<!DOCTYPE html><html><body><iframe id="view" src="view.html" width="700" height="700"></iframe>
<script>
const frame = document.getElementById("view");
window.seen = [];
window.addEventListener("message", (event) => {
  const m = event.data; window.seen.push(m.method || "response");
  if (m.method === "ui/initialize")
    frame.contentWindow.postMessage({jsonrpc: "2.0", id: m.id, result: {protocolVersion: "2026-01-26",
      hostInfo: {name: "test-host", version: "1"}, hostCapabilities: {}, hostContext: {}}}, "*");
  if (m.method === "ui/notifications/initialized")
    frame.contentWindow.postMessage({jsonrpc: "2.0", method: "ui/notifications/tool-result",
                                     params: RESULT}, "*");
});
</script></body></html>"""


async def test_the_answer_view_renders_an_ask_result(http_gw: Served, llm: ScriptedLLM, tmp_path: Path,
                                                     browser: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    token = await http_gw.key("client", ("demo",))
    script(llm, sql(BY_REGION))
    async with http_client(http_gw.url, token, extensions=[APPS]) as client:
        result = await client.call_tool("ask", {"database": "demo", "question": "Orders per region?"})
        view = await client.read_resource(ANSWER_URI)
    answer = result.structured_content
    # a row that tries to inject markup into the view stays text
    answer["rows"][0][0] = '<img src=x onerror="document.title=\'owned\'">'
    (tmp_path / "view.html").write_text(view.contents[0].text, encoding="utf-8")  # type: ignore[union-attr]
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    wire["structuredContent"] = answer
    (tmp_path / "host.html").write_text(HOST.replace("RESULT", json.dumps(wire)), encoding="utf-8")
    browser.get((tmp_path / "host.html").as_uri())
    browser.switch_to.frame(browser.find_element(By.ID, "view"))
    deadline = time.monotonic() + 10
    while not browser.find_elements(By.CSS_SELECTOR, "#table th") and time.monotonic() < deadline:
        time.sleep(0.05)
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#table th")]
    cells = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
             for tr in browser.find_elements(By.CSS_SELECTOR, "#table tbody tr")]
    bars = browser.find_elements(By.CSS_SELECTOR, "#chart svg rect.bar")
    status = browser.find_element(By.ID, "status").text
    shown_sql = browser.find_element(By.ID, "sql").text
    injected = browser.find_elements(By.CSS_SELECTOR, "#table img")
    browser.switch_to.default_content()
    seen = browser.execute_script("return window.seen")
    assert headers == [c["name"] for c in answer["columns"]] == ["region", "orders"]
    assert cells == [[str(v) for v in row] for row in answer["rows"]]
    assert len(bars) == len(answer["rows"]) == 7  # one bar per region
    assert status == "Status: ok" and shown_sql == BY_REGION
    assert injected == [] and browser.title != "owned"
    assert seen[:2] == ["ui/initialize", "ui/notifications/initialized"]
