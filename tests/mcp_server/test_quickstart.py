"""First use over MCP: `nl2sql-gateway mcp --dsn ...` with no config file, the entry `--print-config` prints for
a desktop client (secrets and LLM settings in `env`), and `ask` left out while no LLM can answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mcp import Client, StdioServerParameters

from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import script, sql
from tests.mcp_server.conftest import ROOT
from tests.mcp_server.test_elicitation import storeless_config

WITHOUT_ASK = {"list_databases", "describe_schema", "search_schema", "check_sql", "run_sql", "give_feedback"}
# The child's environment: nothing of the shell's LLM settings, as a desktop client starts it.
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NL2SQL_", "PG"))}


def gateway_mcp(*args: str, env: dict[str, str] | None = None, cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "gateway", "mcp", *args],
                                 env={**CLEAN, "PYTHONPATH": str(ROOT), **(env or {})}, cwd=str(cwd))


async def test_mcp_dsn_serves_a_database_without_a_config_file(demo_dsn: str, llm: ScriptedLLM,
                                                               tmp_path: Path) -> None:
    assert not (tmp_path / "nl2sql-gateway.toml").exists()
    async with Client(gateway_mcp("--dsn", f"shop={demo_dsn}", cwd=tmp_path)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == WITHOUT_ASK  # no LLM: no ask
        listed = await client.call_tool("list_databases", {})
        ran = await client.call_tool("run_sql", {"database": "shop", "sql": "SELECT count(*) AS n FROM regions"})
    assert [d["name"] for d in listed.structured_content["databases"]] == ["shop"]
    assert not ran.is_error and ran.structured_content["rows"] == [[7]]

    # the LLM settings in the client's env (as --print-config puts them) offer ask
    script(llm, sql("SELECT count(*) AS n FROM regions"))
    env = {"NL2SQL_LLM__MODEL": "scripted-model", "OPENAI_BASE_URL": llm.base_url}
    async with Client(gateway_mcp("--dsn", f"shop={demo_dsn}", env=env, cwd=tmp_path)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == WITHOUT_ASK | {"ask"}
        asked = await client.call_tool("ask", {"database": "shop", "question": "How many regions?"})
    assert not asked.is_error and asked.structured_content["rows"] == [[7]], asked


async def test_ask_is_not_listed_without_an_llm_and_says_why_when_called(demo_dsn: str, tmp_path: Path) -> None:
    config = storeless_config(tmp_path, demo_dsn, None)
    async with Client(gateway_mcp("--config", str(config), cwd=tmp_path)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == WITHOUT_ASK
        called = await client.call_tool("ask", {"database": "demo", "question": "How many regions?"})
    assert called.is_error and called.structured_content["code"] == "llm_not_configured"
    assert "NL2SQL_LLM__MODEL" in called.structured_content["detail"]
    assert "env" in called.structured_content["detail"]


def test_print_config_puts_the_password_and_llm_settings_in_env(tmp_path: Path) -> None:
    dsn = "shop=postgresql://reader:s3cret-pw@db.example.com:5432/shop"
    env = {**CLEAN, "PYTHONPATH": str(ROOT), "NL2SQL_LLM__MODEL": "gpt-4o-mini", "OPENAI_API_KEY": "sk-live-key"}
    done = subprocess.run([sys.executable, "-m", "gateway", "mcp", "--dsn", dsn, "--print-config"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["nl2sql"]
    assert entry["args"] == ["mcp", "--dsn", "shop=postgresql://reader@db.example.com:5432/shop"]
    assert entry["env"] == {"PGPASSWORD": "<database password>", "NL2SQL_LLM__MODEL": "gpt-4o-mini",
                            "OPENAI_API_KEY": "<OpenAI-compatible API key>"}
    assert "s3cret" not in done.stdout + done.stderr and "sk-live" not in done.stdout + done.stderr
    assert "env" in done.stderr and "PGPASSWORD" in done.stderr  # what to fill in, and where


@pytest.mark.parametrize("extra", [[], ["--api-key", "nl2sql_x"]])
def test_print_config_for_a_config_file(demo_dsn: str, tmp_path: Path, extra: list[str]) -> None:
    config = storeless_config(tmp_path, demo_dsn, None)
    env = {**CLEAN, "PYTHONPATH": str(ROOT), "NL2SQL_DATABASES__DEMO__PASSWORD": "pw"}
    done = subprocess.run([sys.executable, "-m", "gateway", "mcp", "--config", str(config), "--print-config", *extra],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["nl2sql"]
    assert entry["args"] == ["mcp", "--config", str(config.resolve())]
    expected = {"NL2SQL_DATABASES__DEMO__PASSWORD": "<database password>"}
    if extra:
        expected["NL2SQL_API_KEY"] = "<nl2sql_... API key>"
    assert entry["env"] == expected
    assert "ask" in done.stderr and "NL2SQL_LLM__MODEL" in done.stderr  # no LLM: how to offer ask
    assert urlsplit(demo_dsn).password is None or urlsplit(demo_dsn).password not in done.stdout


def test_desktop_doctests(monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest

    import gateway.mcp.desktop

    for name in os.environ:  # Settings() reads the environment: the examples run in a desktop client's
        if name.startswith(("OPENAI_", "NL2SQL_", "PG")):
            monkeypatch.delenv(name)

    assert doctest.testmod(gateway.mcp.desktop).failed == 0


def test_a_password_in_dsn_is_warned_about(demo_dsn: str, tmp_path: Path) -> None:
    parts = urlsplit(demo_dsn)
    with_password = parts._replace(netloc=f"{parts.username}:visible-pw@{parts.hostname}"
                                          f"{':' + str(parts.port) if parts.port else ''}").geturl()
    done = subprocess.run([sys.executable, "-m", "gateway", "mcp", "--dsn", f"shop={with_password}"],
                          env={**CLEAN, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)  # stdin closed: the client went away at once
    assert done.stdout == ""  # stdout is the protocol's only
    assert "visible in the process list" in done.stderr and "PGPASSWORD" in done.stderr
    assert "visible-pw" not in done.stderr
