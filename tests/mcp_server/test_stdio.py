"""MCP over stdio: ``python -m gateway mcp --config ...`` spawned by the SDK's own stdio client, as a desktop
assistant or an IDE would start it, on the embedded demo database."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from gateway.auth import new_token
from gateway.settings import StoreSettings
from gateway.store import api_keys
from gateway.store.pool import Store
from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import script, sql
from tests.mcp_server.conftest import HIDDEN, stdio_params, write_config

# list_metrics and query_metrics are listed only with a semantic layer (tests/mcp_server/test_metrics_tools.py)
ALL_TOOLS = {"list_databases", "describe_schema", "search_schema", "check_sql", "run_sql", "ask", "give_feedback"}


@pytest.fixture(scope="module")
def config(demo_dsn: str, store_dsn: str, llm_server: ScriptedLLM, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("mcp-stdio"), demo_dsn, store_dsn, llm_server.base_url)


async def test_each_tool_over_stdio(config: Path, llm: ScriptedLLM, tmp_path: Path) -> None:
    errlog = tmp_path / "stderr.log"
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    with errlog.open("w") as err:
        async with Client(stdio_client(stdio_params(config), errlog=err)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == ALL_TOOLS  # the local user, trusted like the CLI: every tool
            listed = await client.call_tool("list_databases", {})
            assert [d["name"] for d in listed.structured_content["databases"]] == ["demo"]
            schema = await client.call_tool("describe_schema", {"database": "demo", "tables": ["employees"]})
            [employees] = schema.structured_content["tables"]
            assert "salary" not in [c["name"] for c in employees["columns"]]
            found = await client.call_tool("search_schema", {"database": "demo", "query": "paypal"})
            assert [v["value"] for v in found.structured_content["values"]] == ["paypal"]
            checked = await client.call_tool("check_sql", {"sql": "SELECT 1"})
            assert checked.structured_content["allowed"] is True

            ran = await client.call_tool("run_sql", {"database": "demo", "sql": "SELECT count(*) AS n FROM regions"})
            assert not ran.is_error and ran.structured_content["rows"] == [[7]]

            blocked = await client.call_tool("run_sql", {"database": "demo", "sql": "SELECT salary FROM employees"})
            assert blocked.is_error and blocked.structured_content["code"] == "sql_blocked"
            assert "hidden_column" in blocked.structured_content["codes"]
            assert not re.search(r"\bsalary\b", json.dumps(blocked.structured_content))

            script(llm, sql("SELECT count(*) FROM regionz"), sql("SELECT count(*) AS n FROM regions"))
            asked = await client.call_tool("ask", {"database": "demo", "question": "How many regions?"},
                                           progress_callback=progress)
            assert asked.structured_content["status"] == "ok" and asked.structured_content["rows"] == [[7]]
            fed = await client.call_tool("give_feedback", {"request_id": asked.structured_content["request_id"],
                                                           "verdict": "incorrect", "note": "checking"})
            assert not fed.is_error and fed.structured_content["created"] is True

            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            assert "nl2sql://databases/demo/rules" in resources
            rules = await client.read_resource("nl2sql://databases/demo/rules")
            assert "Revenue" in rules.contents[0].text  # type: ignore[union-attr]
    assert [done for done, _, _ in seen] == [1, 2]
    logged = errlog.read_text()
    assert "gateway_started" in logged and "mcp_tool" in logged  # the logs went to stderr, not the protocol


async def test_stdio_as_an_api_key(config: Path, store_dsn: str) -> None:
    """With --api-key (or NL2SQL_API_KEY) the process acts as that key: its role, its databases."""
    token = new_token()
    store = await Store.open(StoreSettings(dsn=store_dsn))  # migrated, as `keys create` finds it
    try:
        await api_keys.create(store.pool, key_id=token.key_id, name=f"mcp-{token.key_id}", role="client",
                              databases=["elsewhere"], pg_role=None, secret_sha256=token.secret_sha256)
    finally:
        await store.close()
    env = {"NL2SQL_AUTH__ENABLED": "true", "NL2SQL_API_KEY": token.token}
    async with Client(stdio_params(config, env=env)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS - {"describe_schema", "search_schema"}
        assert (await client.call_tool("list_databases", {})).structured_content == {"databases": []}
        refused = await client.call_tool("run_sql", {"database": "demo", "sql": "SELECT 1"})
        assert refused.is_error and refused.structured_content["code"] == "forbidden"


def test_a_wrong_key_stops_the_command(config: Path) -> None:
    env_key = "nl2sql_" + "a" * 12 + "_" + "b" * 64
    done = subprocess.run([sys.executable, "-m", "gateway", "mcp", "--config", str(config), "--api-key", env_key],
                          env={**os.environ, "NL2SQL_AUTH__ENABLED": "true"}, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert "unauthorized" in done.stderr
    assert not any(n in done.stderr for n in HIDDEN)
