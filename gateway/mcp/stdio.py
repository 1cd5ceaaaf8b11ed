"""MCP over stdio (``nl2sql-gateway mcp``): a desktop assistant or an IDE starts the gateway as its child.

Who calls: the local user who started the process, trusted like the rest of the CLI (it reads the same
config file, DSNs and passwords), so without a key every tool acts as admin on every configured database.
With an API key (``--api-key`` or ``NL2SQL_API_KEY``) it acts as that key instead (role, databases,
Postgres role), looked up in the store on each request so a revocation takes effect: the way to give an
assistant less than its user may do. stdout carries the protocol only; logs go to stderr.
"""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from gateway.mcp.server import build_server, local_caller
from gateway.service import Gateway
from gateway.settings import ConfigError, Settings


async def serve_stdio(settings: Settings, api_key: str | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    if api_key is not None and not (settings.auth.enabled and settings.store.dsn):
        raise ConfigError("--api-key (NL2SQL_API_KEY) needs access control: auth.enabled and a store.dsn "
                          "holding the keys")
    # Guideline regeneration is the serving replicas' job, not an assistant's child process.
    settings = settings.model_copy(update={"magic": settings.magic.model_copy(update={"schedule": False})})
    async with Gateway(settings) as gateway:
        authorization = None if api_key is None else f"Bearer {api_key}"
        resolve = local_caller(gateway, authorization)
        if authorization is not None:
            await resolve(None)  # a wrong or revoked key fails now, not on the first request
        server = build_server(resolve)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
