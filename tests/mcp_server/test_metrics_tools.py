"""MCP list_metrics and query_metrics, and GET /v1/databases/{name}/semantic: the semantic model as clients
see it, without what the rules hide (customers.segment is hidden here), and metric queries checked and run
like run_sql."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal

import asyncpg
import httpx
import pytest

from gateway.testing.scripted_llm import ScriptedLLM
from tests.mcp_server.conftest import ROOT, Served, http_client, mcp_settings, served
from tests.mcp_server.test_http import assert_no_hidden, text_of


@pytest.fixture(scope="module")
async def semantic_gw(demo_dsn: str, store_dsn: str, llm_server: ScriptedLLM,
                      tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    settings = mcp_settings(demo_dsn, store_dsn, tmp_path_factory.mktemp("mcp-semantic"), llm_server.base_url,
                            auth=True)
    settings.semantic_dir = ROOT / "semantic"
    async with served(settings) as (base, state):
        yield Served(base, state)


async def test_the_metric_tools_are_listed_only_with_a_semantic_layer(semantic_gw: Served, http_gw: Served) -> None:
    token = await semantic_gw.key("client", ("demo",))
    async with http_client(semantic_gw.url, token) as client:
        assert {"list_metrics", "query_metrics"} <= {t.name for t in (await client.list_tools()).tools}
    token = await http_gw.key("client", ("demo",))  # no semantic_dir: a tool that can only fail is not listed
    async with http_client(http_gw.url, token) as client:
        assert not {"list_metrics", "query_metrics"} & {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool("list_metrics", {"database": "demo"})
    assert refused.is_error and "semantic_dir" in text_of(refused)


async def test_list_metrics_leaves_out_what_the_rules_hide(semantic_gw: Served) -> None:
    token = await semantic_gw.key("client", ("demo",))
    async with http_client(semantic_gw.url, token) as client:
        listed = await client.call_tool("list_metrics", {"database": "demo"})
    assert not listed.is_error
    data = listed.structured_content
    names = {m["name"] for m in data["metrics"]}
    assert {"revenue", "average_order_value", "merchandise_revenue"} <= names and data["configured"]
    revenue = next(m for m in data["metrics"] if m["name"] == "revenue")
    assert revenue["definition"] == "SUM(orders.total_amount) FILTER(WHERE orders.status <> 'cancelled')"
    assert "sales" in revenue["synonyms"] and "region" in revenue["dimensions"]
    assert_no_hidden(text_of(listed))  # the segment dimension names a hidden column
    async with httpx.AsyncClient(base_url=semantic_gw.base) as http:
        response = await http.get("/v1/databases/demo/semantic", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200 and response.json()["metrics"] == data["metrics"]
        assert_no_hidden(response.text)
        other = await http.get("/v1/databases/other/semantic", headers={"Authorization": f"Bearer {token}"})
        assert other.status_code == 403 and other.json()["code"] == "forbidden"


async def test_query_metrics_compiles_checks_and_runs(semantic_gw: Served, demo_dsn: str) -> None:
    token = await semantic_gw.key("client", ("demo",))
    async with http_client(semantic_gw.url, token) as client:
        found = await client.call_tool("query_metrics", {
            "database": "demo", "metrics": ["revenue"], "dimensions": ["region"],
            "filters": [{"dimension": "channel", "value": "web"}], "order_by": ["-revenue"], "limit": 3})
        assert not found.is_error, text_of(found)
        data = found.structured_content
        assert data["compiled_from"] == "semantic_model" and data["row_count"] == 3
        conn = await asyncpg.connect(demo_dsn)
        try:
            want = await conn.fetch(
                "SELECT r.name, sum(o.total_amount) FROM orders o JOIN customers c USING (customer_id) "
                "JOIN regions r USING (region_id) WHERE o.status <> 'cancelled' AND o.channel = 'web' "
                "GROUP BY 1 ORDER BY 2 DESC LIMIT 3")
        finally:
            await conn.close()
        assert [[r[0], Decimal(str(r[1]))] for r in data["rows"]] == [[r[0], r[1]] for r in want]
        # A hidden column cannot be reached through a dimension: the compiled SQL meets the safety check.
        hidden = await client.call_tool("query_metrics", {"database": "demo", "metrics": ["revenue"],
                                                          "dimensions": ["segment"]})
        assert hidden.is_error and hidden.structured_content["code"] == "sql_blocked"
        assert "hidden_column" in text_of(hidden)
        # Values are literals, never SQL; unknown names are the model's problem code.
        injected = await client.call_tool("query_metrics", {
            "database": "demo", "metrics": ["order_count"],
            "filters": [{"dimension": "channel", "value": "web' OR '1'='1"}]})
        assert not injected.is_error and injected.structured_content["rows"] == [[0]]
        unknown = await client.call_tool("query_metrics", {"database": "demo", "metrics": ["profit"]})
        assert unknown.is_error and unknown.structured_content["code"] == "semantic_query_invalid"
        refused = await client.call_tool("query_metrics", {"database": "other", "metrics": ["revenue"]})
        assert refused.is_error and refused.structured_content["code"] == "forbidden"

