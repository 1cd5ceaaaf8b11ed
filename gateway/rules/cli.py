"""``nl2sql-gateway rules ...``: tools for the DBA's rule files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from gateway.rules.check import check_rules
from gateway.rules.loading import RuleProblem

app = typer.Typer(help="Check the DBA rule files (rules/<database>.yaml) against the live schema.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.command("check")
def check_command(
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="TOML config file (default: $NL2SQL_CONFIG or ./nl2sql-gateway.toml).",
        exists=True, dir_okay=False, envvar="NL2SQL_CONFIG")] = None,
    database: Annotated[str | None, typer.Option(help="Check only this configured database.")] = None,
    rules_dir: Annotated[Path | None, typer.Option(help="Rule files folder (default: the rules_dir "
                                                      "setting).", file_okay=False)] = None,
) -> None:
    """Validate rule files: YAML, keys and types, and every table and column against the live schema.

    Prints one `file:line: message` per problem. Exit status: 0 clean (warnings allowed), 1 errors,
    2 usage error or a database that could not be read.
    """
    from gateway.cli import _settings  # the one place that turns --config into Settings

    settings = _settings(config)
    names = sorted(settings.databases)
    if database is not None:
        if database not in settings.databases:
            typer.echo(f"unknown database {database!r}; configured: {', '.join(names) or 'none'}", err=True)
            raise typer.Exit(2)
        names = [database]
    folder = rules_dir or settings.rules_dir
    if not folder.is_dir():  # "0 errors" would read as "your rules are fine"
        typer.echo(f"no rules folder at {folder.absolute()}: nothing was checked. Write {folder}/<database>.yaml "
                   "(`nl2sql-gateway init DSN` starts one), or point --rules-dir or rules_dir at your rules.", err=True)
        raise typer.Exit(2)
    try:
        schemas = asyncio.run(_introspect(settings, names))
    except _Unreadable as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    problems = check_rules(folder, schemas)
    if database is not None:  # files for other databases are not this run's business
        problems = [p for p in problems if p.severity == "error" or _belongs(p, folder, database)]
    for problem in problems:
        typer.echo(str(problem))
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    typer.echo(f"{errors} error(s), {warnings} warning(s) in the rules for {', '.join(names) or 'no database'}",
               err=True)
    raise typer.Exit(1 if errors else 0)


class _Unreadable(Exception):
    pass


async def _introspect(settings, names: list[str]):  # type: ignore[no-untyped-def]
    from gateway import errors
    from gateway.execute import Targets
    from gateway.execute.introspect import introspect

    subset = settings.model_copy(update={"databases": {n: settings.databases[n] for n in names}})
    targets = await Targets.open(subset)
    try:
        out = {}
        for name in names:
            try:
                out[name] = await introspect(targets.by_name[name])
            except errors.GatewayError as exc:
                raise _Unreadable(f"database {name!r}: {exc.code}: {exc.detail}") from exc
        return out
    finally:
        await targets.close()


def _belongs(problem: RuleProblem, folder: Path, database: str) -> bool:
    path = Path(problem.file)
    return path.parent == folder / database or path.stem == database
