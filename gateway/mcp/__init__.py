"""The gateway as an MCP server (official ``mcp`` SDK), an adapter over :class:`gateway.service.Gateway`.

- :mod:`~gateway.mcp.tools`: the tools (``list_databases``, ``describe_schema``, ``search_schema``,
  ``check_sql``, ``run_sql``, ``ask``, ``give_feedback``), their schemas, annotations and roles;
- :mod:`~gateway.mcp.results`: structured results, rows framed as data, problems as tool errors;
- :mod:`~gateway.mcp.server`: the server: tools, resources (schema, rules summary, active guideline per
  database) and who each request comes from;
- :mod:`~gateway.mcp.http`: streamable HTTP at ``/mcp`` on the HTTP app, with its API keys;
- :mod:`~gateway.mcp.stdio`: ``nl2sql-gateway mcp``, for desktop assistants and IDEs.
"""
