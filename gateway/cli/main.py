"""The ``nl2sql-gateway`` command line."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gateway import safety
from gateway.cli import auth as keys_cli
from gateway.cli import examples as examples_cli
from gateway.cli import extras
from gateway.cli import magic as guideline_cli
from gateway.cli import store as store_cli
from gateway.cli import templates as templates_cli
from gateway.cli.eval import eval_app
from gateway.cli.load import DEMO_DATABASE, ConfigOption, load
from gateway.cli.quickstart import (
    apply_dsn_options,
    check_exposure_of_dsn,
    parse_dsn_option,
    password_warning,
    reach_dsn_databases,
)
from gateway.cli.rules import app as rules_app
from gateway.cli.semantic import app as semantic_app
from gateway.cli.style import CLI_STYLE
from gateway.serving import deadline as request_deadline
from gateway.settings import DEFAULT_CONFIG_FILE, ConfigError, Settings, config_path

app = typer.Typer(
    **CLI_STYLE,
    name="nl2sql-gateway",
    help="A read-only SQL gateway between natural-language clients and PostgreSQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

def _print_version(value: bool) -> None:
    if value:
        from gateway.config.version import __version__

        typer.echo(f"nl2sql-gateway {__version__}")
        raise typer.Exit(0)


@app.callback()
def _every_command(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """A read-only SQL gateway between natural-language clients and PostgreSQL."""
    from gateway.observability.logging import configure_logging

    # stdout carries each command's machine-readable output (JSON, JSONL, tokens); logs go to stderr, as
    # readable lines on a terminal and JSON lines otherwise.
    configure_logging("INFO", json_logs=None)


@app.command()
def serve(
    config: ConfigOption = None,
    host: Annotated[str | None, typer.Option(help="Listen address (server.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Listen port (server.port).")] = None,
    workers: Annotated[int | None, typer.Option(
        min=1, max=64, help="Worker processes on the one port (server.workers); each has its own pools, caches "
                            "and rate limits, /metrics sums them all, SIGTERM drains every one.")] = None,
    dsn: Annotated[list[str] | None, typer.Option(
        "--dsn", metavar="[NAME=]postgresql://...",
        help="Serve this database (repeatable; NAME defaults to the DSN's database) instead of the configured "
             "ones, with access control off and on loopback only: no config file or store needed. Each is "
             "connected to before the start. Keep the password out of the URL (ps shows it): PGPASSWORD or "
             "~/.pgpass.")] = None,
    llm_model: Annotated[str | None, typer.Option(help="LLM model for /v1/ask (llm.model).")] = None,
    llm_base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible endpoint (llm.base_url; OPENAI_BASE_URL also works). The key comes from "
             "OPENAI_API_KEY.")] = None,
) -> None:
    """Serve the HTTP API with the configured databases, or the ones given with --dsn."""
    settings = load(config)
    if dsn:
        _or_exit(apply_dsn_options, settings, dsn)
    elif not settings.databases:
        _no_databases(config)
    if host is not None:
        settings.server.host = host
    if dsn:
        _or_exit(check_exposure_of_dsn, settings.server.host)
        warning = password_warning(dsn)
        if warning:
            typer.echo(warning, err=True)
        _or_exit(reach_dsn_databases, settings, dsn)
    if port is not None:
        settings.server.port = port
    if workers is not None:
        settings.server.workers = workers
    if llm_model is not None:
        settings.llm.model = llm_model
    if llm_base_url is not None:
        settings.llm.base_url = llm_base_url
    _serve(settings)


def _or_exit(apply: Any, *args: Any) -> Any:
    try:
        return apply(*args)
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _no_databases(config: Path | None) -> None:
    """Zero databases is a mistake, never a server that answers nothing: say what to do."""
    path = config or config_path()
    if path is None:
        typer.echo("configuration error: no config file found (looked for $NL2SQL_CONFIG and "
                   f"./{DEFAULT_CONFIG_FILE}) and no database configured. Either:\n"
                   "  nl2sql-gateway serve --dsn postgresql://user@host:5432/dbname   (no config file needed)\n"
                   "  nl2sql-gateway init postgresql://user@host:5432/dbname          (writes a commented config "
                   "file)\n"
                   "or copy nl2sql-gateway.example.toml to ./nl2sql-gateway.toml.", err=True)
    else:
        typer.echo(f"configuration error: {path} configures no database: add a [databases.NAME] table with a "
                   "dsn (or set NL2SQL_DATABASES__NAME__DSN), or use serve --dsn postgresql://...", err=True)
    raise typer.Exit(2)


def _serve(settings: Settings) -> None:
    from gateway.api.app import create_app
    from gateway.auth import check_exposure
    from gateway.observability.logging import configure_logging
    from gateway.serving import server
    from gateway.serving.ports import ensure_port_free

    try:
        check_exposure(settings)  # no listening beyond loopback without API keys
        ensure_port_free(settings.server.host, settings.server.port)
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from exc
    configure_logging(settings.logging.level, settings.logging.json_logs)
    # bounded headers; SIGTERM drains (every worker), then exits 0
    status = server.serve(settings, create_app)
    if status:
        raise typer.Exit(status)


@app.command()
def demo(
    data_dir: Annotated[Path | None, typer.Option(help="Where the embedded Postgres keeps its data "
                                                    "(default: the user data directory; reused on restart).")] = None,
    port: Annotated[int, typer.Option(help="Port to serve the gateway on (127.0.0.1 only).")] = 8000,
) -> None:
    """Start an embedded Postgres with the demo database and serve the gateway on 127.0.0.1.

    Needs no other service. Prints the demo database's DSN and a config file (NL2SQL_CONFIG) through which
    every other command (schema, check, keys, eval, guideline) reaches the running demo. Ctrl-C or SIGTERM
    stops the gateway and the embedded server.
    """
    if extras.missing("demo"):  # the core install (production, the container image) has no embedded Postgres
        typer.echo(extras.install_hint("demo", "demo"), err=True)
        raise typer.Exit(2)
    from gateway.demo.run import run_demo

    _or_exit(run_demo, data_dir, port, _serve)


@app.command()
def check(
    jsonl: Annotated[bool, typer.Option("--jsonl", help="Read lines {\"id\", \"sql\"}; write lines "
                                        "{\"id\", \"allowed\", \"codes\"}.")] = False,
    database: Annotated[str | None, typer.Option(help="Use this configured database's safety policy.")] = None,
    config: ConfigOption = None,
) -> None:
    """Check SQL read from stdin without running it; print the verdict as JSON.

    Exit status: 0 allowed, 1 blocked, 2 usage error (empty input, bad JSON line, unknown database).
    """
    policy = safety.Policy() if database is None else _check_policy(database, config)
    if not jsonl:
        sql = sys.stdin.read()
        if not sql.strip():
            typer.echo("no SQL on stdin", err=True)
            raise typer.Exit(2)
        verdict = safety.check(sql, policy)
        typer.echo(json.dumps(verdict.as_dict()))
        raise typer.Exit(0 if verdict.allowed else 1)
    raise typer.Exit(_check_jsonl(policy))


def _check_policy(database: str, config: Path | None) -> safety.Policy:
    """The database's safety policy plus its rules. ``check`` needs no connection, so a database that is
    not configured but has rule files (the shipped ``demo`` always has) is checked with the default policy."""
    from gateway.config.assets import shipped_dir
    from gateway.rules import RulesRegistry
    from gateway.rules.loading import rule_files

    settings = load(config)
    db = settings.database(database)
    rules_dir = settings.rules_dir
    if db is None and not rule_files(rules_dir, database) and database == DEMO_DATABASE:
        rules_dir = shipped_dir("rules")
    if db is None and not rule_files(rules_dir, database):
        typer.echo(f"unknown database {database!r}: configured: {', '.join(sorted(settings.databases)) or 'none'}; "
                   f"no rule file for it in {rules_dir}", err=True)
        raise typer.Exit(2)
    base = db.safety if db is not None else safety.Policy()
    return RulesRegistry(rules_dir).policy_for(database, base)  # hidden objects, functions, tighter limits


def _check_jsonl(policy: safety.Policy) -> int:
    status = 0
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            sql, ident = item["sql"], item.get("id")
            if not isinstance(sql, str):
                raise TypeError("sql must be a string")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            typer.echo(f"line {number}: expected {{\"id\", \"sql\"}}: {exc}", err=True)
            status = 2
            continue
        verdict = safety.check(sql, policy)
        typer.echo(json.dumps({"id": ident, "allowed": verdict.allowed, "codes": verdict.codes}))
        if not verdict.allowed and status == 0:
            status = 1
    return status


@app.command()
def schema(
    name: Annotated[str, typer.Argument(help="A configured database name.")],
    config: ConfigOption = None,
) -> None:
    """Print the schema of a configured database as JSON: what its rules leave visible, as clients see it."""
    settings = load(config)
    if settings.database(name) is None:
        typer.echo(f"unknown database {name!r}; configured: {', '.join(sorted(settings.databases)) or 'none'}",
                   err=True)
        raise typer.Exit(2)
    from gateway import errors
    from gateway.service import Gateway

    only = settings.model_copy(update={"databases": {name: settings.databases[name]},
                                       "magic": settings.magic.model_copy(update={"schedule": False})})

    async def run() -> dict[str, Any]:
        async with Gateway(only) as gateway:
            return await gateway.schema(name)

    try:
        typer.echo(json.dumps(asyncio.run(
            request_deadline.operation(
                settings.server.operation_timeout_s, run(), "reading the schema")), indent=2, default=str))
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        raise typer.Exit(1) from exc


@app.command()
def mcp(
    config: ConfigOption = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", envvar="NL2SQL_API_KEY",
        help="Act as this API key (its role, databases and Postgres role) instead of as the local user with "
             "every right; needs auth.enabled and a store.")] = None,
    dsn: Annotated[list[str] | None, typer.Option(
        "--dsn", metavar="[NAME=]postgresql://...",
        help="Serve this database (repeatable; NAME defaults to the DSN's database) instead of the configured "
             "ones, as serve --dsn does: no config file or store needed. The password comes from PGPASSWORD "
             "in the client's env.")] = None,
    print_config: Annotated[bool, typer.Option(
        "--print-config", help="Print the mcpServers entry (Claude Desktop, Cursor) that starts this command, "
                               "with the database password and LLM settings in its env, and exit.")] = False,
) -> None:
    """Serve MCP (Model Context Protocol) on stdin/stdout, for desktop assistants and IDEs that start it.

    Tools: list_databases, describe_schema, search_schema, check_sql, run_sql, ask (only with an LLM),
    give_feedback; resources: each database's schema, rules summary and active guideline, and the answer view
    MCP Apps clients show. stdout carries only the protocol; logs go to stderr. The HTTP server offers the same
    over streamable HTTP at /mcp.
    """
    settings = load(config)
    if dsn:
        _or_exit(apply_dsn_options, settings, dsn)
        if any(d.password is not None for d in settings.databases.values()) and not print_config:
            typer.echo("warning: a password in --dsn is visible in the process list; leave it out and put it in "
                       "the MCP client's env as PGPASSWORD (see mcp --print-config)", err=True)
    elif not settings.databases:
        _no_databases(config)
    if print_config:
        from gateway.mcp.desktop import advice, client_config, client_entry

        entry = client_entry(settings, dsn, config or config_path(), api_key=api_key is not None)
        llm = settings.llm
        has_llm = bool((llm.model or any(d.ask.model for d in settings.databases.values()))
                       and (llm.base_url or llm.api_key))
        typer.echo(json.dumps(client_config(entry), indent=2))
        for line in advice(entry, has_llm):
            typer.echo(line, err=True)
        return
    from gateway import errors
    from gateway.mcp.stdio import serve_stdio
    from gateway.observability.logging import configure_logging

    configure_logging(settings.logging.level, settings.logging.json_logs)  # to stderr, as every command's
    try:
        asyncio.run(serve_stdio(settings, api_key))
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from exc
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        raise typer.Exit(1) from exc


@app.command()
def init(
    dsn: Annotated[str, typer.Argument(metavar="[NAME=]postgresql://...", help="The database to start with.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write ./nl2sql-gateway.toml (commented) and rules/NAME.yaml (the tables with their comments, places
    for descriptions and hidden columns) for one database, and print the least-privilege role SQL."""
    from gateway.cli.starter import GATEWAY_ROLE, GRANTS_HEADER, config_text, rules_text
    from gateway.rules.grants import database_grants

    name, database = _or_exit(parse_dsn_option, dsn)
    config_file, rules_file = DEFAULT_CONFIG_FILE, Path("rules") / f"{name}.yaml"
    existing = [str(p) for p in (config_file, rules_file) if p.exists()]
    if existing and not force:
        typer.echo(f"{', '.join(existing)} already exist(s); keep them, or overwrite with --force", err=True)
        raise typer.Exit(2)
    schema = _introspect_one(load(None).model_copy(update={"databases": {name: database}}), name)
    rules_file.parent.mkdir(parents=True, exist_ok=True)
    rules_file.write_text(rules_text(schema), encoding="utf-8")
    config_file.write_text(config_text(name, database.dsn), encoding="utf-8")
    typer.echo(f"wrote {config_file} and {rules_file} ({len(schema.tables)} tables)", err=True)
    if database.password is not None:
        typer.echo(f"the password stays out of the file: export NL2SQL_DATABASES__{name.upper()}__PASSWORD=...",
                   err=True)
    typer.echo(f"next: edit {rules_file}, then `nl2sql-gateway rules check --database {name}` and "
               "`nl2sql-gateway serve`", err=True)
    password = database.password.get_secret_value() if database.password else None
    try:
        grants = asyncio.run(database_grants(database.dsn, rules_file.parent, name, GATEWAY_ROLE, password=password))
    except (OSError, ValueError) as exc:  # the files are written; the grants can be printed later
        typer.echo(f"could not generate the role's grants ({exc}); run `nl2sql-gateway rules grants {name} "
                   f"--role {GATEWAY_ROLE}` later", err=True)
        raise typer.Exit(1) from exc
    typer.echo(GRANTS_HEADER.format(name=name, role=GATEWAY_ROLE) + grants, nl=False)


def _introspect_one(settings: Settings, name: str) -> Any:
    from gateway import errors
    from gateway.service import Gateway

    try:
        return asyncio.run(request_deadline.operation(
                settings.server.operation_timeout_s, Gateway.read_catalog(settings, name), "reading the schema"))
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        raise typer.Exit(1) from exc


# Sub-command groups: each loads its own settings from its --config (gateway.cli.load), so none imports this
# module back.
app.add_typer(rules_app, name="rules", help="Check the DBA rule files (rules/<database>.yaml) against the live "
              "schema.")
app.add_typer(semantic_app, name="semantic", help="Check, show and import semantic models (semantic/<database>"
              ".yaml): metrics, dimensions, synonyms.")
app.add_typer(keys_cli.app, name="keys")
app.add_typer(eval_app, name="eval")
app.add_typer(guideline_cli.app, name="guideline")
app.command(name="migrate")(store_cli.migrate)
app.add_typer(examples_cli.app, name="examples")
app.add_typer(templates_cli.app, name="templates")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
