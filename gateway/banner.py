"""The few lines ``serve`` (and ``demo``) print on a terminal once the gateway is up: where it listens, the
console, the databases, the LLM in use and what is wrong with the database roles. Logs stay on stderr as
log lines (JSON unless stderr is a terminal); this is for the person who just started it."""

from __future__ import annotations

import sys
from typing import TextIO

from gateway.rules.grants import PrivilegeReport
from gateway.settings import Settings

DEFAULT_OPENAI_ENDPOINT = "https://api.openai.com/v1 (OpenAI)"


def base_url(settings: Settings) -> str:
    host = settings.server.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else f"[{host}]" if ":" in host else host
    return f"http://{shown}:{settings.server.port}"


def llm_line(settings: Settings) -> str:
    """The model and endpoint /v1/ask uses, or what to set for it."""
    llm = settings.llm
    if not llm.model:
        return ("not configured: /v1/ask answers only verified questions; set NL2SQL_LLM__MODEL and "
                "OPENAI_BASE_URL (or OPENAI_API_KEY for OpenAI), or --llm-model / --llm-base-url")
    return f"{llm.model} at {llm.base_url or DEFAULT_OPENAI_ENDPOINT}"


def startup_banner(settings: Settings, privileges: PrivilegeReport | None) -> str:
    url = base_url(settings)
    lines = [f"nl2sql-gateway is serving on {url}  (Ctrl-C or SIGTERM stops it)",
             f"  Web console:  {url}/console/",
             f"  API docs:     {url}/docs",
             f"  Databases:    {', '.join(sorted(settings.databases)) or 'none'}",
             f"  LLM:          {llm_line(settings)}",
             f"  Access:       {'API keys' if settings.auth.enabled else 'open (no access control, loopback only)'}"]
    for name in sorted(settings.databases):
        for problem in (privileges.details(name) if privileges is not None else []):
            lines.append(f"  WARNING {name}: {problem}  (`nl2sql-gateway rules check --database {name}` says the fix)")
    return "\n".join(lines) + "\n"


def print_banner(settings: Settings, privileges: PrivilegeReport | None, stream: TextIO | None = None) -> None:
    """Print the banner when ``stream`` (stderr) is a terminal; nothing goes to a pipe or a log file."""
    stream = stream or sys.stderr
    if stream.isatty():
        stream.write("\n" + startup_banner(settings, privileges) + "\n")
        stream.flush()
