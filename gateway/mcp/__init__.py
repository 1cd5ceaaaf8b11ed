"""The gateway as an MCP server (official ``mcp`` SDK), an adapter over :class:`gateway.service.Gateway`.

- :mod:`~gateway.mcp.tools`: the tools (``list_databases``, ``describe_schema``, ``search_schema``,
  ``check_sql``, ``run_sql``, ``ask``, ``give_feedback``), their schemas, annotations and roles;
- :mod:`~gateway.mcp.results`: structured results, rows framed as data, problems as tool errors;
- :mod:`~gateway.mcp.apps`: the MCP Apps answer view (a table and a chart) ``run_sql`` and ``ask`` link to;
- :mod:`~gateway.mcp.clarify`: an ambiguous ``ask`` put to the user through elicitation;
- :mod:`~gateway.mcp.server`: the server: tools, resources (schema, rules summary, active guideline per
  database) and who each request comes from;
- :mod:`~gateway.mcp.http`: streamable HTTP at ``/mcp`` on the HTTP app, with its API keys;
- :mod:`~gateway.mcp.stdio`: ``nl2sql-gateway mcp``, for desktop assistants and IDEs;
- :mod:`~gateway.mcp.desktop`: the client entry ``mcp --print-config`` prints (secrets and LLM settings in env).
"""
