"""``nl2sql-gateway guideline ...``: the guideline lifecycle from a DBA's shell.

Imports of the store and MAGIC happen inside the commands, so other CLI commands start fast.

Read-only commands (list, show, diff, export) only open the store. Commands that run agents or the gate
(regenerate, activate) start the gateway's resources the way the server does (targets, rules, LLM, store),
without its scheduler.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from gateway import errors
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.state import GatewayState
    from gateway.store import Store
    from gateway.store.guidelines import GuidelineVersion

T = TypeVar("T")

app = typer.Typer(name="guideline", help="List, show, diff, regenerate, activate, roll back and export the "
                  "self-correction guideline versions kept in the store.", no_args_is_help=True)

# Set by gateway.cli before a command runs: how to load the settings (the --config option lives there).
load: Callable[[Path | None], Settings] = lambda config: Settings()  # noqa: E731

ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.", exists=True,
                                                      dir_okay=False, envvar="NL2SQL_CONFIG")]


@asynccontextmanager
async def _store(settings: Settings) -> AsyncIterator[Store]:
    from gateway.store import Store

    store = await Store.open(settings.store, apply_migrations=settings.store.migrate_on_start)
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def _gateway(settings: Settings) -> AsyncIterator[tuple[GatewayState, Store]]:
    from gateway.service import Gateway

    quiet = settings.model_copy(update={"magic": settings.magic.model_copy(update={"schedule": False})})
    async with Gateway(quiet) as gateway:
        state = gateway.state
        if state.store is None:
            raise errors.StoreNotConfigured("store.dsn is not set")
        yield state, state.store


def _run(work: Awaitable[T]) -> T:
    try:
        return asyncio.run(work)  # type: ignore[arg-type]
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        if "evaluation" in exc.extra:
            typer.echo(json.dumps(exc.extra["evaluation"], indent=2, default=str), err=True)
        raise typer.Exit(1) from exc


@app.command("list")
def list_versions(config: ConfigOption = None) -> None:
    """List the versions: number, status, parent, creation time, corrections used, gate verdict."""
    from gateway.store import guidelines

    settings = load(config)

    async def work() -> None:
        async with _store(settings) as store:
            versions = await guidelines.list_all(store.pool)
            in_force = "active" if not any(v.status == "active" for v in versions) else "retired"
            typer.echo(f"v0     {in_force:<9} the shipped guideline file {_shipped_file(settings)}")
            for v in versions:
                s = v.summary()
                gate = {True: "passed", False: "failed", None: "-"}[s["evaluation_passed"]]
                typer.echo(f"v{v.version:<5} {v.status:<9} parent={('v' + str(v.parent)) if v.parent else '-':<6} "
                           f"{s['created_at'][:19]}  corrections={s['corrections']:<4} gate={gate}")
    _run(work())


def _version(text: str) -> int | None:
    return None if text == "active" else int(text.lstrip("v"))


def _shipped_file(settings: Settings) -> Path:
    from gateway.context.sources import DEFAULT_GUIDELINE_FILE

    return settings.guidelines_dir / DEFAULT_GUIDELINE_FILE


async def _resolve(store: Store, which: str, settings: Settings) -> GuidelineVersion:
    from gateway.magic import lifecycle
    from gateway.store import guidelines

    number = _version(which)
    if number is None:
        active = await guidelines.active(store.pool)
        return active if active is not None else _shipped(settings, "active")
    if number == guidelines.SHIPPED:
        active = await guidelines.active(store.pool)
        return _shipped(settings, "active" if active is None else "retired")
    return await lifecycle.get(store, number)


def _shipped(settings: Settings, status: str) -> GuidelineVersion:
    """Version 0: the shipped guideline file, in force while no stored version is active."""
    from datetime import UTC, datetime

    from gateway.store.guidelines import GuidelineVersion

    path = _shipped_file(settings)
    try:
        text = path.read_text(encoding="utf-8")
        created = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError as exc:
        raise errors.UnknownGuidelineVersion(f"the shipped guideline file {path} cannot be read: "
                                             f"{exc.strerror or exc}") from exc
    return GuidelineVersion(version=0, parent=None, text=text, status=status,
                            provenance={"file": str(path), "corrections": []}, evaluation=None, created_at=created)


@app.command()
def show(
    version: Annotated[str, typer.Argument(help="A version number (3 or v3) or `active`.")] = "active",
    as_json: Annotated[bool, typer.Option("--json", help="Print text, provenance and evaluation as JSON.")] = False,
    config: ConfigOption = None,
) -> None:
    """Print a version as Markdown: header with provenance and evaluation, then the guideline."""
    from gateway.magic import lifecycle

    settings = load(config)

    async def work() -> None:
        async with _store(settings) as store:
            v = await _resolve(store, version, settings)
            if as_json:
                typer.echo(json.dumps(v.as_dict(), indent=2, default=str))
            elif v.version == 0:
                typer.echo(f"# Guideline v0 ({v.status})\n\n- the shipped guideline file: {v.provenance['file']}\n\n"
                           f"{v.text.strip()}\n")
            else:
                typer.echo(lifecycle.render_markdown(v))
    _run(work())


@app.command()
def diff(
    old: Annotated[str, typer.Argument(help="The older version (number or `active`).")],
    new: Annotated[str, typer.Argument(help="The newer version (number or `active`).")] = "active",
    config: ConfigOption = None,
) -> None:
    """Unified diff between two versions' texts."""
    from gateway.magic import lifecycle

    settings = load(config)

    async def work() -> None:
        async with _store(settings) as store:
            typer.echo(lifecycle.diff(await _resolve(store, old, settings), await _resolve(store, new, settings)),
                       nl=False)
    _run(work())


@app.command()
def regenerate(
    activate: Annotated[bool | None, typer.Option("--activate/--no-activate", help="Gate and activate a "
                        "passing candidate (default: magic.auto_activate); one built from unreviewed "
                        "corrections waits for `guideline activate`.")] = None,
    config: ConfigOption = None,
) -> None:
    """Run MAGIC on the pending corrections now and print the run report as JSON."""
    from gateway.magic import lifecycle

    async def work() -> None:
        async with _gateway(load(config)) as (state, store):
            report = await lifecycle.run_regeneration(state, store, activate=activate, trigger="cli")
            typer.echo(json.dumps(report.as_dict(), indent=2, default=str))
    _run(work())


@app.command()
def activate(
    version: Annotated[str, typer.Argument(help="The version to activate.")],
    force: Annotated[bool, typer.Option("--force", help="Skip the activation gate.")] = False,
    config: ConfigOption = None,
) -> None:
    """Activate a version; a candidate must pass the activation gate unless --force."""
    from gateway.magic import lifecycle

    async def work() -> None:
        async with _gateway(load(config)) as (state, store):
            v = await lifecycle.activate(state, store, int(version.lstrip("v")), force=force)
            typer.echo(f"v{v.version} is active")
    _run(work())


@app.command()
def rollback(
    version: Annotated[str | None, typer.Argument(help="The version to go back to; 0 is the shipped guideline "
                       "file (default: the one active before the current one, else 0).")] = None,
    config: ConfigOption = None,
) -> None:
    """Re-activate an earlier version (no gate: it was accepted before), or the shipped guideline (0)."""
    from gateway.magic import lifecycle
    from gateway.store import guidelines

    async def work() -> None:
        async with _store(load(config)) as store:
            number = int(version.lstrip("v")) if version else None
            if number is None:
                previous = await guidelines.previous_active(store.pool)
                number = previous.version if previous is not None else guidelines.SHIPPED
            if number == guidelines.SHIPPED:
                await guidelines.activate_shipped(store.pool)
                typer.echo("v0 (the shipped guideline file) is active")
                return
            await lifecycle.get(store, number)
            await guidelines.activate(store.pool, number)
            typer.echo(f"v{number} is active")
    _run(work())


@app.command()
def export(
    directory: Annotated[Path, typer.Option("--dir", help="Where to write one Markdown file per version.")] = Path(
        "guidelines"),
    config: ConfigOption = None,
) -> None:
    """Write every version to DIR/magic-vNNNN.md for review in git."""
    from gateway.magic import lifecycle

    async def work() -> None:
        async with _store(load(config)) as store:
            for path in await lifecycle.export(store, directory):
                typer.echo(str(path))
    _run(work())
