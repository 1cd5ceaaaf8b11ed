"""``nl2sql-gateway mcp --print-config``: the entry a desktop client (Claude Desktop, Cursor) needs to start
this very command.

A desktop client starts the gateway with its own environment, not the shell's: the database password and the
LLM settings must therefore be in the entry's ``env``, never in ``args`` (which other local users can read
in the process list) nor left in the shell where one tried the command. Secrets are printed as placeholders
to fill in (the output is meant to be pasted into a file, and terminals are logged); everything else as it
is configured now.

>>> from gateway.settings import DatabaseSettings, LLMSettings, Settings
>>> from pydantic import SecretStr
>>> s = Settings(databases={"shop": DatabaseSettings(dsn="postgresql://reader@db/shop", password=SecretStr("pw"))},
...              llm=LLMSettings(model="gpt-4o-mini", api_key=SecretStr("sk-1")))
>>> entry = client_entry(s, ["shop=postgresql://reader@db/shop"], None, command="nl2sql-gateway")
>>> entry["args"], sorted(entry["env"])
(['mcp', '--dsn', 'shop=postgresql://reader@db/shop'], ['NL2SQL_LLM__MODEL', 'OPENAI_API_KEY', 'PGPASSWORD'])
>>> entry["env"]["PGPASSWORD"]
'<database password>'
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from gateway.settings import Settings

SERVER_NAME = "nl2sql"
PASSWORD = "<database password>"
API_KEY = "<OpenAI-compatible API key>"
GATEWAY_KEY = "<nl2sql_... API key>"


def client_entry(settings: Settings, dsns: list[str] | None, config: Path | None, *,
                 api_key: bool = False, command: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` entry: the command with ``--dsn`` (as given, without password) or ``--config``, and
    an ``env`` with the database password(s), the LLM settings and the gateway API key when there are any."""
    args = ["mcp"]
    env: dict[str, str] = {}
    if dsns:
        for name, database in settings.databases.items():
            args += ["--dsn", f"{name}={database.dsn}"]
        if any(d.password is not None for d in settings.databases.values()) or os.environ.get("PGPASSWORD"):
            env["PGPASSWORD"] = PASSWORD  # --dsn takes the password from the environment, as libpq does
    else:
        if config is not None:
            args += ["--config", str(config.resolve())]
        for name, database in settings.databases.items():
            if database.password is not None:
                env[f"NL2SQL_DATABASES__{name.upper()}__PASSWORD"] = PASSWORD
    llm = settings.llm
    if llm.model:
        env["NL2SQL_LLM__MODEL"] = llm.model
    if llm.base_url:
        env["OPENAI_BASE_URL"] = llm.base_url
    if llm.api_key is not None:
        env["OPENAI_API_KEY"] = API_KEY
    if api_key:
        env["NL2SQL_API_KEY"] = GATEWAY_KEY
    entry: dict[str, Any] = {"command": command or shutil.which("nl2sql-gateway") or "nl2sql-gateway",
                             "args": args}
    if env:
        entry["env"] = env
    return entry


def client_config(entry: dict[str, Any]) -> dict[str, Any]:
    """The whole file for Claude Desktop (``claude_desktop_config.json``) and Cursor (``~/.cursor/mcp.json``)."""
    return {"mcpServers": {SERVER_NAME: entry}}


def advice(entry: dict[str, Any], answers_questions: bool) -> list[str]:
    """What to tell the person pasting it (on stderr)."""
    lines = ["Paste this into claude_desktop_config.json (Claude Desktop) or ~/.cursor/mcp.json (Cursor).",
             "The client starts the gateway with only this env: the database password and the LLM settings "
             "belong there, not in args."]
    placeholders = [k for k, v in entry.get("env", {}).items() if v.startswith("<")]
    if placeholders:
        lines.append("Replace the placeholders of " + ", ".join(placeholders) + " with the real values.")
    if not answers_questions:
        lines.append("No LLM is configured, so `ask` is not offered: add NL2SQL_LLM__MODEL and OPENAI_API_KEY "
                     "(or OPENAI_BASE_URL for a local endpoint) to env to offer it.")
    return lines
