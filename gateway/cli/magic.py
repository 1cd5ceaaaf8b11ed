"""``nl2sql-gateway guideline ...``: the guideline lifecycle from a DBA's shell.

Imports of the store and MAGIC happen inside the commands, so other CLI commands start fast.

Read-only commands (list, show, diff, export) only open the store. Commands that run agents or the gate
(regenerate, activate) start the gateway's resources the way the server does (targets, rules, LLM, store),
without its scheduler.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from gateway import errors
from gateway.cli.load import load
from gateway.cli.style import CLI_STYLE
from gateway.serving import deadline as request_deadline
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.service import Gateway, GuidelineVersion

T = TypeVar("T")

app = typer.Typer(**CLI_STYLE, name="guideline", help="List, show, diff, regenerate, activate, roll back, reset to the "
                  "shipped default and export the self-correction guideline versions kept in the store, per "
                  "database (--database) or global.", no_args_is_help=True)


ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.", exists=True,
                                                      dir_okay=False, envvar="NL2SQL_CONFIG")]


@asynccontextmanager
async def _store(settings: Settings) -> AsyncIterator[Gateway]:
    """A Gateway with only the store open: these commands work while the databases and the LLM are down."""
    from gateway.service import Gateway

    async with Gateway.store_only(settings) as gateway:
        yield gateway


@asynccontextmanager
async def _gateway(settings: Settings) -> AsyncIterator[Gateway]:
    """A whole gateway (regenerating and activating ask the LLM), without MAGIC's scheduler."""
    from gateway.service import Gateway

    if not settings.store.dsn:
        raise errors.StoreNotConfigured("store.dsn is not set")
    quiet = settings.model_copy(update={"magic": settings.magic.model_copy(update={"schedule": False})})
    async with Gateway(quiet) as gateway:
        yield gateway


def _run(work: Awaitable[T], settings: Settings | None = None) -> T:
    """Run a command's work; with ``settings``, bounded by ``server.operation_timeout_s`` (regenerate and
    activate, which ask the LLM, are bounded per question instead)."""
    if settings is not None:
        work = request_deadline.operation(settings.server.operation_timeout_s, work, "the guideline command")
    try:
        return asyncio.run(work)  # type: ignore[arg-type]
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        for r in exc.extra.get("regressions") or []:
            typer.echo(f"  {r['question']}\n    reason: {r['reason']}\n    before: {r['before_sql']}\n"
                       f"    after:  {r['after_sql']}", err=True)
        if exc.extra.get("report_id") is not None and exc.extra.get("version") is not None:
            typer.echo(f"stored as report {exc.extra['report_id']}: nl2sql-gateway guideline regressions "
                       f"v{exc.extra['version']}", err=True)
        if "evaluation" in exc.extra and not exc.extra.get("regressions"):
            typer.echo(json.dumps(exc.extra["evaluation"], indent=2, default=str), err=True)
        raise typer.Exit(1) from exc


SHIPPED = 0  # the version number of the shipped guideline file (gateway.store.guidelines.SHIPPED)

DatabaseOption = Annotated[str | None, typer.Option("--database", "-d", help="The database's own versions (a "
                          "configured database); without it, the global scope.")]


def _scope(settings: Settings, database: str | None) -> str | None:
    """``unknown_database`` for a name the config does not know (the store-only commands open no targets)."""
    if database is not None and database not in settings.databases:
        known = ", ".join(sorted(settings.databases)) or "none configured"
        raise errors.UnknownDatabase(f"no database named {database!r} (known: {known})", database=database)
    return database


def _scope_label(database: str | None) -> str:
    return database if database is not None else "global"


@app.command("list")
def list_versions(
    database: Annotated[str | None, typer.Option("--database", "-d", help="Only this database's own versions.")]
    = None,
    only_global: Annotated[bool, typer.Option("--global", help="Only the global versions.")] = False,
    config: ConfigOption = None,
) -> None:
    """List the versions: number, status, scope, parent, creation time, corrections used, gate verdict.

    The first line says what is in force where no stored version is (v0, the shipped file); with --database,
    what that database uses now."""
    settings = load(config)

    async def work() -> None:
        scope = _scope(settings, database)
        async with _store(settings) as gateway:
            versions = await gateway.guidelines(scope, only_global=only_global)
            in_force = await gateway.guideline_in_force_of(scope)
            status = "active" if in_force.source == "default" else "retired"
            typer.echo(f"v0     {status:<9} {_scope_label(scope):<12} the shipped guideline file "
                       f"{_shipped_file(settings, scope)}")
            for v in versions:
                s = v.summary()
                gate = {True: "passed", False: "failed", None: "-"}[s["evaluation_passed"]]
                typer.echo(f"v{v.version:<5} {v.status:<9} {_scope_label(v.database):<12} "
                           f"parent={('v' + str(v.parent)) if v.parent else '-':<6} "
                           f"{s['created_at'][:19]}  corrections={s['corrections']:<4} gate={gate}")
            if scope is not None:
                typer.echo(f"in force for {scope}: {in_force.label} ({in_force.source})")
    _run(work(), settings)


def _version(text: str) -> int | None:
    return None if text == "active" else int(text.lstrip("v"))


def _shipped_file(settings: Settings, database: str | None = None) -> Path:
    from gateway.context.sources import DEFAULT_GUIDELINE_FILE

    own = settings.guidelines_dir / f"{database}.md" if database else None
    return own if own is not None and own.is_file() else settings.guidelines_dir / DEFAULT_GUIDELINE_FILE


async def _resolve(gateway: Gateway, which: str, settings: Settings, database: str | None = None) -> GuidelineVersion:
    """A version by number, ``active`` (what the scope uses now) or 0 (the scope's shipped file)."""
    number = _version(which)
    in_force = await gateway.stored_guideline_in_force(database)
    if number is None:
        return in_force if in_force is not None else _shipped(settings, "active", database)
    if number == SHIPPED:
        return _shipped(settings, "active" if in_force is None else "retired", database)
    return await gateway.guideline(number)


def _shipped(settings: Settings, status: str, database: str | None = None) -> GuidelineVersion:
    """Version 0: the shipped guideline file, in force while no stored version is active."""
    from datetime import UTC, datetime

    from gateway.service import GuidelineVersion

    path = _shipped_file(settings, database)
    try:
        text = path.read_text(encoding="utf-8")
        created = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError as exc:
        raise errors.UnknownGuidelineVersion(f"the shipped guideline file {path} cannot be read: "
                                             f"{exc.strerror or exc}") from exc
    return GuidelineVersion(version=0, parent=None, text=text, status=status,
                            provenance={"file": str(path), "corrections": []}, evaluation=None, created_at=created,
                            database=database)


@app.command()
def show(
    version: Annotated[str, typer.Argument(help="A version number (3 or v3) or `active`.")] = "active",
    database: Annotated[str | None, typer.Option("--database", "-d", help="With `active` or 0: the guideline "
                        "this database uses (its own version, else the global one, else the shipped file).")]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print text, provenance and evaluation as JSON.")] = False,
    config: ConfigOption = None,
) -> None:
    """Print a version as Markdown: header with provenance and evaluation, then the guideline."""
    from gateway.magic import lifecycle

    settings = load(config)

    async def work() -> None:
        async with _store(settings) as gateway:
            v = await _resolve(gateway, version, settings, _scope(settings, database))
            if as_json:
                typer.echo(json.dumps(v.as_dict(), indent=2, default=str))
            elif v.version == 0:
                typer.echo(f"# Guideline v0 ({v.status})\n\n- the shipped guideline file: {v.provenance['file']}\n\n"
                           f"{v.text.strip()}\n")
            else:
                typer.echo(lifecycle.render_markdown(v))
    _run(work(), settings)


@app.command()
def diff(
    old: Annotated[str, typer.Argument(help="The older version (number or `active`).")],
    new: Annotated[str, typer.Argument(help="The newer version (number or `active`).")] = "active",
    database: Annotated[str | None, typer.Option("--database", "-d", help="`active` and 0 mean what this "
                        "database uses.")] = None,
    config: ConfigOption = None,
) -> None:
    """Unified diff between two versions' texts."""
    from gateway.magic import lifecycle

    settings = load(config)

    async def work() -> None:
        scope = _scope(settings, database)
        async with _store(settings) as gateway:
            typer.echo(lifecycle.diff(await _resolve(gateway, old, settings, scope),
                                      await _resolve(gateway, new, settings, scope)), nl=False)
    _run(work(), settings)


@app.command()
def regenerate(
    activate: Annotated[bool | None, typer.Option("--activate/--no-activate", help="Gate and activate a "
                        "passing candidate (default: magic.auto_activate); one built from unreviewed "
                        "corrections waits for `guideline activate`.")] = None,
    database: Annotated[str | None, typer.Option("--database", "-d", help="Use only this database's "
                        "corrections and write a candidate for it (default: every database's, a global "
                        "candidate).")] = None,
    config: ConfigOption = None,
) -> None:
    """Run MAGIC on the pending corrections now and print the run report as JSON."""

    async def work() -> None:
        async with _gateway(load(config)) as gateway:
            report = await gateway.regenerate_by("cli", activate=activate, database=database)
            typer.echo(json.dumps(report.as_dict(), indent=2, default=str))
    _run(work())


@app.command()
def activate(
    version: Annotated[str, typer.Argument(help="The version to activate (in its own scope: its database, or "
                       "global).")],
    force: Annotated[bool, typer.Option("--force", help="Skip the activation gate.")] = False,
    config: ConfigOption = None,
) -> None:
    """Activate a version; a candidate must pass the activation gate unless --force."""

    async def work() -> None:
        async with _gateway(load(config)) as gateway:
            v = await gateway.activate(int(version.lstrip("v")), force=force, actor="cli")
            typer.echo(f"v{v.version} is active for {_scope_label(v.database)}")
    _run(work())


@app.command()
def regressions(
    version: Annotated[str, typer.Argument(help="The guideline version whose replays to show.")],
    as_json: Annotated[bool, typer.Option("--json", help="The whole stored report as JSON.")] = False,
    config: ConfigOption = None,
) -> None:
    """Show the latest regression replay of a version: what was right before and is wrong with it, and why."""
    from gateway.magic.replay import render_report

    settings = load(config)

    async def work() -> None:
        async with _store(settings) as gateway:
            number = int(version.lstrip("v"))
            found = await gateway.regressions(number, limit=1)  # unknown_guideline_version first
            if not found:
                typer.echo(f"v{number} has no regression replay yet (one runs when it is activated)")
                return
            report = found[0]
            if as_json:
                typer.echo(json.dumps(report.as_dict(), indent=2, default=str))
                return
            typer.echo(f"report {report.id} ({report.created_at.isoformat()}, asked by {report.actor})")
            typer.echo(render_report(report.report), nl=False)
    _run(work(), settings)


@app.command()
def rollback(
    version: Annotated[str | None, typer.Argument(help="The version to go back to (it must have been active "
                       "in this scope); 0 is the shipped guideline, like `guideline reset` (default: the one "
                       "active before the current one, else 0).")] = None,
    database: DatabaseOption = None,
    config: ConfigOption = None,
) -> None:
    """Re-activate an earlier version of a scope (no gate: it was accepted before), or the shipped guideline (0)."""
    settings = load(config)

    async def work() -> None:
        scope = _scope(settings, database)
        async with _store(settings) as gateway:
            number = int(version.lstrip("v")) if version else None
            if number is None:
                previous = await gateway.previous_guideline(scope)
                number = previous.version if previous is not None else SHIPPED
            if number == SHIPPED:
                await gateway.retire_guideline(scope, actor="cli")
                typer.echo(_reset_message(scope))
                return
            v = await gateway.rollback_stored(number, database=scope, actor="cli")
            typer.echo(f"v{v.version} is active for {_scope_label(v.database)}")
    _run(work(), settings)


def _reset_message(database: str | None) -> str:
    if database is None:
        return "v0 (the shipped guideline file) is active"
    return (f"{database} has no active version of its own: it uses the global version, or v0 (the shipped "
            "guideline file) when none is active")


@app.command()
def reset(
    database: DatabaseOption = None,
    config: ConfigOption = None,
) -> None:
    """Go back to the shipped default: retire the scope's active version (recorded as a `reset` event).

    For a database, it then uses the global version, or the shipped file when none is active; globally, the
    shipped file is in force for every database without a version of its own."""
    settings = load(config)

    async def work() -> None:
        scope = _scope(settings, database)
        async with _store(settings) as gateway:
            retired = await gateway.retire_guideline(scope, actor="cli")
            now = await gateway.guideline_in_force_of(scope)
            typer.echo(f"{_scope_label(scope)}: retired {('v' + str(retired.version)) if retired else 'nothing'}; "
                       f"in force now: {now.label} ({now.source})")
    _run(work(), settings)


@app.command()
def events(
    database: Annotated[str | None, typer.Option("--database", "-d", help="Only this database's events.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.", min=1)] = 50,
    config: ConfigOption = None,
) -> None:
    """Print the changes of the active guideline (activate, rollback, reset), newest first, as JSON lines."""
    settings = load(config)

    async def work() -> None:
        async with _store(settings) as gateway:
            for event in await gateway.guideline_events(_scope(settings, database), limit=limit):
                typer.echo(json.dumps(event.as_dict(), default=str))
    _run(work(), settings)


@app.command()
def export(
    directory: Annotated[Path, typer.Option("--dir", help="Where to write one Markdown file per version.")] = Path(
        "guidelines"),
    config: ConfigOption = None,
) -> None:
    """Write every version to DIR/magic-vNNNN.md for review in git."""
    settings = load(config)

    async def work() -> None:
        async with _store(settings) as gateway:
            for path in await gateway.export_guidelines(directory):
                typer.echo(str(path))
    _run(work(), settings)
