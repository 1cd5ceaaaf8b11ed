"""``nl2sql-gateway init``: a commented config file and a starter rules file for one database.

The rules file lists the database's tables and columns with their comments as descriptions (what the LLM
is told), and shows where to hide a table or a column. Values are written as JSON strings, which YAML and
TOML both read as double-quoted strings.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the type of Gateway.read_catalog's result
    from gateway.service import Schema

# The role `init` writes grants for: a dedicated one, never the role the DSN logs in as (which may own the
# tables; the grants begin by revoking what the role holds).
GATEWAY_ROLE = "nl2sql_gateway"

GRANTS_HEADER = """\
-- Least-privilege role for the gateway on {name!r}. Run as an admin: create the role, then the grants below,
-- and point databases.{name}.dsn at it:
--   CREATE ROLE {role} LOGIN PASSWORD '...';
-- After you hide tables or columns in the rules file, print the grants again (hidden ones get no SELECT):
--   nl2sql-gateway rules grants {name} --role {role}     (--apply --admin-dsn DSN runs them)
"""


def config_text(name: str, dsn: str, rules_dir: str = "rules") -> str:
    env = f"NL2SQL_DATABASES__{name.upper()}__PASSWORD"
    return f"""\
# nl2sql-gateway configuration, written by `nl2sql-gateway init` for the database {name!r}.
# `nl2sql-gateway serve` reads ./nl2sql-gateway.toml (or the file NL2SQL_CONFIG names). Every setting is
# documented in nl2sql-gateway.example.toml; any of them can be overridden from the environment
# (NL2SQL_ + the path joined with "__", e.g. NL2SQL_SERVER__PORT=9000).
# Secrets never go in this file: export {env}=... (or PGPASSWORD), OPENAI_API_KEY=...

rules_dir = {json.dumps(rules_dir)}  # {rules_dir}/{name}.yaml: descriptions, hidden columns, instructions

[server]
host = "127.0.0.1"  # API keys (auth) are needed to listen on anything but loopback
port = 8000

[auth]
# API keys live in the store database: set [store] dsn and turn this on before sharing the gateway.
enabled = false

# [store]
# dsn = "postgresql://nl2sql@db.internal:5432/nl2sql_store"  # feedback, guideline versions, API keys, audit

[llm]
# model = "gpt-4o-mini"                      # with OPENAI_API_KEY in the environment, or:
# base_url = "http://localhost:11434/v1"     # any OpenAI-compatible server (Ollama, vLLM, LiteLLM)

[databases.{name}]
dsn = {json.dumps(dsn)}  # connect with a read-only role
description = ""  # what this database holds, shown in GET /v1/databases
pool_max_size = 10

[databases.{name}.limits]
max_rows = 1000              # more rows set `truncated`
statement_timeout_ms = 5000  # Postgres statement_timeout per query
"""


def rules_text(schema: Schema) -> str:
    name = schema.database
    lines = [
        f"# Rules for the database {name!r}, written by `nl2sql-gateway init` from its tables and comments.",
        "# Descriptions are what the LLM is told about a table or column: fill in the empty ones that matter.",
        "# Hide what clients must never see: `hidden: true` on a table, or `{hidden: true}` on a column; hidden",
        "# objects are left out of every prompt and blocked by the safety check.",
        f"# Check the file against the live schema with: nl2sql-gateway rules check --database {name}",
        "# More keys (instructions, required_conditions, result_checks, limits): see rules/demo.yaml.",
        "",
        "tables:" if schema.tables else "tables: {}",
    ]
    for table in schema.tables:
        lines += [
            f"  {json.dumps(table.qualified_name)}:",
            f"    description: {json.dumps(table.comment or '')}",
            "    # hidden: true",
        ]
        if table.columns:
            lines.append("    columns:")
        for column in table.columns:
            lines.append(f"      {json.dumps(column.name)}: {{description: {json.dumps(column.comment or '')}}}"
                         f"  # {column.type}; add `hidden: true` to hide it")
    lines += [
        "",
        "instructions: []  # e.g. - Revenue means orders.total_amount of orders that were not cancelled.",
        "",
    ]
    return "\n".join(lines)
