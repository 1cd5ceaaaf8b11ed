"""Templates over MCP (streamable HTTP, the SDK's client): the ask tool's answer is trusted, each template is a
tool in the opt-in templates group, and the templates' questions are prompts."""

from __future__ import annotations

from pathlib import Path

from mcp import types
from mcp.shared.exceptions import MCPError

from gateway import Gateway
from gateway.testing.scripted_llm import ScriptedLLM
from tests.mcp_server.conftest import Served, http_client, mcp_settings, served
from tests.templates.helpers import STATUS_TEMPLATE, is_generation, script_llm


async def test_templates_over_mcp(demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    script_llm(llm)
    for group in (False, True):
        (tmp_path / str(group)).mkdir()
        settings = mcp_settings(demo_dsn, fresh_db, tmp_path / str(group), llm.base_url, auth=True)
        settings.templates = settings.templates.model_copy(update={"mcp_tools": group})
        if not group:  # made once, in the shared store, as the CLI would
            async with Gateway(settings) as python_gw:
                await python_gw.create_template("demo", **{k: v for k, v in STATUS_TEMPLATE.items()
                                                           if k != "database"})
        async with served(settings) as (base, state):
            gw = Served(base, state)
            client_token = await gw.key("client", ("demo",))
            async with http_client(gw.url, client_token) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert ("template_orders_by_status" in tools) is group
                asked = await client.call_tool("ask", {"database": "demo", "question": "How many orders are returned?"})
                assert not asked.is_error, asked
                assert asked.structured_content["trusted"]["parameters"] == {"status": "returned"}
                assert asked.structured_content["attempts"][0]["source"] == "template"

                prompts = (await client.list_prompts()).prompts
                assert [(p.name, p.title) for p in prompts] == [("template_orders_by_status",
                                                                 "How many orders are shipped")]
                got = await client.get_prompt("template_orders_by_status", {"status": "pending"})
                message = got.messages[0].content
                assert isinstance(message, types.TextContent) and "How many orders are pending" in message.text

                if group:
                    tool = tools["template_orders_by_status"]
                    assert "shipped" in tool.input_schema["properties"]["status"]["enum"]
                    ran = await client.call_tool("template_orders_by_status", {"status": "cancelled"})
                    assert not ran.is_error, ran
                    assert ran.structured_content["trusted"]["parameters"] == {"status": "cancelled"}
                    bad = await client.call_tool("template_orders_by_status", {"status": "canceled"})
                    assert bad.is_error
                    problem = bad.structured_content
                    assert problem is not None and problem["code"] == "template_value_invalid"
                    assert problem["suggestions"][0] == "cancelled"
                else:
                    off = await client.call_tool("template_orders_by_status", {"status": "cancelled"})
                    assert off.is_error and off.structured_content["code"] == "not_found"
                try:
                    await client.get_prompt("template_nope", {})
                except MCPError as exc:
                    assert "unknown_template" in str(exc)
                else:
                    raise AssertionError("an unknown prompt was served")
    assert not [r for r in llm.requests if is_generation(r)]
