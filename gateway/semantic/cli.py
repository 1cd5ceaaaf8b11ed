"""``nl2sql-gateway semantic ...``: check, show and import semantic models (semantic/<database>.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gateway.semantic.loading import SemanticProblem, broken_entries, load_model, model_files
from gateway.semantic.show import dump

app = typer.Typer(help="Check, show and import the semantic models (semantic/<database>.yaml): metrics, "
                  "dimensions, synonyms and their SQL definitions.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

ConfigOption = Annotated[Path | None, typer.Option(
    "--config", "-c", help="TOML config file (default: $NL2SQL_CONFIG or ./nl2sql-gateway.toml).",
    exists=True, dir_okay=False, envvar="NL2SQL_CONFIG")]
DirOption = Annotated[Path | None, typer.Option(
    "--semantic-dir", help="Semantic model folder (default: the semantic_dir setting).", file_okay=False)]
FORMATS = ("native", "dbt", "cube", "cortex")


def _folder(config: Path | None, semantic_dir: Path | None, database: str) -> Path:
    """The folder to read: --semantic-dir, else the setting; the shipped demo model for the demo database."""
    if semantic_dir is not None:
        return semantic_dir
    from gateway.assets import shipped_dir
    from gateway.cli import DEMO_DATABASE, _settings  # the one place that turns --config into Settings

    folder = _settings(config).semantic_dir or Path("semantic")
    if database == DEMO_DATABASE and not model_files(folder, database):
        return shipped_dir("semantic")
    return folder


def _load(folder: Path, database: str) -> tuple[object, list[SemanticProblem]]:
    files = model_files(folder, database)
    model, problems = load_model(files)
    return model, broken_entries(folder, database) + problems


@app.command("check")
def check_command(
    database: Annotated[str, typer.Option(help="The database whose model to check.")],
    config: ConfigOption = None,
    semantic_dir: DirOption = None,
    live: Annotated[bool, typer.Option(help="Also check every table, key and column against the database's "
                                       "live schema (when it is configured).")] = True,
) -> None:
    """Validate a database's semantic model files: YAML, keys and types, references between entities,
    measures and metrics, SQL fragments, and (when the database is configured) every table, key and column
    against its live schema. One `file:line: message` per problem; exit 0 clean (warnings allowed), 1
    errors, 2 no model file or a database that could not be read."""
    folder = _folder(config, semantic_dir, database)
    if not model_files(folder, database) and not broken_entries(folder, database):
        typer.echo(f"no semantic model for {database!r} in {folder}: write {folder}/{database}.yaml", err=True)
        raise typer.Exit(2)
    from gateway.semantic.loading import load_with_lines

    model, problems, line = load_with_lines(model_files(folder, database))
    problems = broken_entries(folder, database) + problems
    if live and not any(p.severity == "error" for p in problems):
        problems += _against_the_schema(config, database, model, line)
    for problem in problems:
        typer.echo(str(problem))
    errors = sum(p.severity == "error" for p in problems)
    typer.echo(f"{errors} error(s), {len(problems) - errors} warning(s)", err=True)
    raise typer.Exit(1 if errors else 0)


def _against_the_schema(config: Path | None, database: str, model: object, line: object) -> list[SemanticProblem]:
    """The live schema's verdict on the model; [] when the database is not configured."""
    import asyncio

    from gateway import errors
    from gateway.cli import _settings
    from gateway.execute import Targets
    from gateway.execute.introspect import introspect
    from gateway.semantic.check import schema_problems
    from gateway.semantic.model import SemanticModel

    settings = _settings(config)
    if database not in settings.databases:
        return []
    assert isinstance(model, SemanticModel)

    async def read() -> object:
        subset = settings.model_copy(update={"databases": {database: settings.databases[database]}})
        targets = await Targets.open(subset)
        try:
            return await introspect(targets.by_name[database], everything=True)
        finally:
            await targets.close()

    try:
        schema = asyncio.run(read())
    except errors.GatewayError as exc:
        typer.echo(f"database {database!r}: {exc.code}: {exc.detail}", err=True)
        raise typer.Exit(2) from exc
    return schema_problems(model, schema, line)  # type: ignore[arg-type]


@app.command("show")
def show_command(
    database: Annotated[str, typer.Option(help="The database whose model to print.")],
    config: ConfigOption = None,
    semantic_dir: DirOption = None,
) -> None:
    """Print a database's semantic model as native YAML (all of its files merged, defaults left out)."""
    from gateway.semantic.model import SemanticModel

    folder = _folder(config, semantic_dir, database)
    model, problems = _load(folder, database)
    errors = [p for p in problems if p.severity == "error"]
    for problem in errors:
        typer.echo(str(problem), err=True)
    if errors:
        raise typer.Exit(1)
    assert isinstance(model, SemanticModel)
    typer.echo(dump(model), nl=False)


@app.command("import")
def import_command(
    source: Annotated[Path, typer.Argument(help="A file or folder in the given format.", exists=True)],
    format: Annotated[str, typer.Option("--format", "-f", help="native, dbt (MetricFlow semantic_models and "
                                        "metrics YAML), cube (Cube data model YAML) or cortex (Snowflake Cortex "
                                        "Analyst semantic model YAML).")],
    out: Annotated[Path | None, typer.Option(help="Write the native YAML here (default: stdout).",
                                             dir_okay=False)] = None,
) -> None:
    """Read a semantic model from another format and print it as native YAML (save it as
    semantic/<database>.yaml). Problems are printed as `file:line: message`; exit 1 when the result does
    not load."""
    from gateway.extras import install_hint, missing
    from gateway.semantic.importers import ImportProblem, import_model

    if format not in FORMATS:
        typer.echo(f"unknown format {format!r}; one of {', '.join(FORMATS)}", err=True)
        raise typer.Exit(2)
    if format == "dbt" and missing("semantic"):
        typer.echo(install_hint("semantic", "semantic import", "to read dbt projects"), err=True)
        raise typer.Exit(2)
    try:
        model, problems = import_model(source, format)
    except ImportProblem as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from exc
    for problem in problems:
        typer.echo(str(problem), err=True)
    if any(p.severity == "error" for p in problems):
        raise typer.Exit(1)
    text = dump(model)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out} ({len(model.entities)} entities, {len(model.metrics)} metrics)", err=True)
