"""``nl2sql-gateway templates list|show|create|delete|run|suggest``: trusted answers from a DBA's shell.

The whole ``Gateway`` is opened (a template is checked against the live schema and tried before it is
stored), as the local admin: whoever can run this holds the store's and the databases' credentials. The
creator is recorded as ``cli:<operating-system user>``.
"""

from __future__ import annotations

import asyncio
import getpass
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer

from gateway import deadline as request_deadline
from gateway import errors
from gateway.settings import Settings

app = typer.Typer(name="templates", help="Trusted answers: DBA templates (parameterized SQL with example "
                  "questions) that answer matching questions without the LLM; suggestions from the log.",
                  no_args_is_help=True)

# Set by gateway.cli before a command runs: how to load the settings (the --config option lives there).
load: Callable[[Path | None], Settings] = lambda config: Settings()  # noqa: E731

ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.", exists=True,
                                                      dir_okay=False, envvar="NL2SQL_CONFIG")]
DatabaseOption = Annotated[str | None, typer.Option("--database", "-d", help="Only this database.")]


def _run(config: Path | None, work: Callable[[Any], Coroutine[Any, Any, None]]) -> None:
    from gateway.auth import ANONYMOUS, Principal
    from gateway.service import Gateway

    settings = load(config)
    if not settings.store.dsn:
        typer.echo("store.dsn is not set (NL2SQL_STORE__DSN)", err=True)
        raise typer.Exit(2)
    quiet = settings.model_copy(update={"magic": settings.magic.model_copy(update={"schedule": False})})
    # The local admin, named after the operating-system user (what `created_by` records).
    me = Principal(name=f"cli:{getpass.getuser()}", role=ANONYMOUS.role, databases=ANONYMOUS.databases)

    async def main() -> None:
        async with Gateway(quiet) as gateway:
            await work((gateway, me))

    try:
        asyncio.run(request_deadline.operation(settings.server.operation_timeout_s, main(), "the templates command"))
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        for key in ("suggestions", "codes"):
            if exc.extra.get(key):
                typer.echo(f"{key}: {', '.join(map(str, exc.extra[key]))}", err=True)
        raise typer.Exit(1) from exc


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            typer.echo(f"{what} is NAME=VALUE: {item!r}", err=True)
            raise typer.Exit(2)
        out[key.strip()] = value
    return out


@app.command("list")
def list_templates(database: DatabaseOption = None,
                   as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
                   config: ConfigOption = None) -> None:
    """List the templates: name, database, uses and the first question."""
    async def work(ctx: Any) -> None:
        gateway, me = ctx
        for t in await gateway.templates(database, principal=me):
            typer.echo(json.dumps(t) if as_json else f"{t['name']:<28} {t['database']:<12} {t['uses']:>6}  "
                       f"{t['questions'][0]}")
    _run(config, work)


@app.command()
def show(name: Annotated[str, typer.Argument(help="The template's name.")], config: ConfigOption = None) -> None:
    """One template as JSON: SQL, parameters (column, type, default, known values), questions, usage."""
    async def work(ctx: Any) -> None:
        gateway, me = ctx
        typer.echo(json.dumps(await gateway.template(name, principal=me), indent=2))
    _run(config, work)


@app.command()
def create(
    name: Annotated[str, typer.Argument(help="Lower-case letters, digits and _.")],
    database: Annotated[str, typer.Option("--database", "-d", help="The template's database.")],
    sql: Annotated[str | None, typer.Option(help="SQL with $1 .. $n, one per --param in order (default: the "
                                            "example's).")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="NAME=TABLE.COLUMN[=DEFAULT], once per parameter, in $k order.")] = None,
    question: Annotated[list[str] | None, typer.Option(
        "--question", help="An example question with {NAME} slots (or spelling the defaults); repeatable.")] = None,
    example: Annotated[int | None, typer.Option("--example", help="Promote this approved example (its SQL and "
                                                "question are the defaults).", min=1)] = None,
    description: Annotated[str, typer.Option(help="What it answers, for people.")] = "",
    config: ConfigOption = None,
) -> None:
    """Create a template, checked against the live schema and tried with its defaults first."""
    parameters = []
    for item in param or []:
        pname, _, rest = item.partition("=")
        column, sep, default = rest.partition("=")
        if not pname or not column:
            typer.echo(f"--param is NAME=TABLE.COLUMN[=DEFAULT]: {item!r}", err=True)
            raise typer.Exit(2)
        parameters.append({"name": pname, "column": column, **({"default": default} if sep else {})})

    async def work(ctx: Any) -> None:
        gateway, me = ctx
        made = await gateway.create_template(database, name, sql=sql, parameters=parameters,
                                             questions=question or [], description=description,
                                             example_id=example, principal=me)
        typer.echo(f"template {made['name']} created on {made['database']}: {'; '.join(made['questions'])}")
    _run(config, work)


@app.command()
def delete(name: Annotated[str, typer.Argument(help="The template's name.")], config: ConfigOption = None) -> None:
    """Delete a template: its questions go back to the LLM."""
    async def work(ctx: Any) -> None:
        gateway, me = ctx
        await gateway.delete_template(name, principal=me)
        typer.echo(f"template {name} deleted")
    _run(config, work)


@app.command()
def run(name: Annotated[str, typer.Argument(help="The template's name.")],
        value: Annotated[list[str] | None, typer.Option("--set", help="NAME=VALUE for a parameter (default: its "
                                                        "default); repeatable.")] = None,
        config: ConfigOption = None) -> None:
    """Run a template with chosen values; prints the trusted answer as JSON."""
    values = _pairs(value or [], "--set")

    async def work(ctx: Any) -> None:
        gateway, me = ctx
        answer = await gateway.run_template(name, values, principal=me)
        typer.echo(json.dumps({k: v for k, v in answer.as_dict().items() if k != "attempts"}, default=str))
    _run(config, work)


@app.command()
def suggest(database: DatabaseOption = None,
            limit: Annotated[int, typer.Option(help="At most this many.", min=1)] = 20,
            config: ConfigOption = None) -> None:
    """Questions asked often whose answers were marked correct or approved: asked, confirmed, approved, question."""
    async def work(ctx: Any) -> None:
        gateway, me = ctx
        for s in await gateway.template_suggestions(database, limit=limit, principal=me):
            example = f"example {s['example_id']}" if s["example_id"] else "no example"
            typer.echo(f"{s['asked']:>5} {s['confirmed']:>5} {s['approved']:>5}  {s['database']:<12} {example:<14} "
                       f"{s['question']}")
    _run(config, work)
