"""``nl2sql-gateway examples list|approve|reject``: review what clients teach from a DBA's shell.

Only the store is opened. Whoever can run this holds the store's credentials, which is more than any API
key: the decision is recorded as ``cli:<operating-system user>`` unless ``--reviewer`` names someone.
"""

from __future__ import annotations

import asyncio
import getpass
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from gateway import deadline as request_deadline
from gateway import errors
from gateway.cli_style import CLI_STYLE
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.store.examples import StoredExample

app = typer.Typer(**CLI_STYLE, name="examples",
                  help="Review the question/SQL examples clients propose through feedback: only approved ones "
                       "are used as few-shot examples and exact answers.", no_args_is_help=True)

# Set by gateway.cli before a command runs: how to load the settings (the --config option lives there).
load: Callable[[Path | None], Settings] = lambda config: Settings()  # noqa: E731

ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.", exists=True,
                                                      dir_okay=False, envvar="NL2SQL_CONFIG")]
NoteOption = Annotated[str | None, typer.Option("--note", help="Why: kept with the decision.")]
ReviewerOption = Annotated[str | None, typer.Option("--reviewer", help="Who decides (default: cli:<your user>).")]


def _run(config: Path | None, work: Callable[[Any], Coroutine[Any, Any, None]]) -> None:
    from gateway.store import Store

    settings = load(config)
    if not settings.store.dsn:
        typer.echo("store.dsn is not set (NL2SQL_STORE__DSN)", err=True)
        raise typer.Exit(2)

    async def main() -> None:
        store = await Store.open(settings.store, apply_migrations=settings.store.migrate_on_start)
        try:
            await work(store)
        finally:
            await store.close()

    try:
        asyncio.run(request_deadline.operation(
                settings.server.operation_timeout_s, main(), "the examples command"))
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        raise typer.Exit(1) from exc


def _line(e: StoredExample) -> str:
    question = e.question if len(e.question) <= 60 else e.question[:57] + "..."
    return f"{e.id:<6} {e.status:<9} {e.database:<12} {e.proposed_by:<20} {question}"


@app.command("list")
def list_examples(
    status: Annotated[str | None, typer.Option(help="proposed, approved or rejected (default: all).")] = "proposed",
    database: Annotated[str | None, typer.Option(help="Only this database's examples.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.", min=1)] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line, with the SQL.")] = False,
    config: ConfigOption = None,
) -> None:
    """List examples, oldest first; by default the review queue (status proposed)."""
    from gateway.store import examples

    if status not in (None, "all", *examples.STATUSES):
        typer.echo(f"--status must be one of {', '.join(examples.STATUSES)} or all", err=True)
        raise typer.Exit(2)

    async def work(store: Any) -> None:
        chosen = None if status in (None, "all") else status
        for e in await examples.list_by_status(store.pool, chosen, database, limit=limit):  # type: ignore[arg-type]
            typer.echo(json.dumps(e.as_dict()) if as_json else _line(e))
    _run(config, work)


def _decide(example_id: int, decision: Literal["approved", "rejected"], note: str | None,
            reviewer: str | None, config: Path | None) -> None:
    from gateway.review import decide

    async def work(store: Any) -> None:
        who = reviewer or f"cli:{getpass.getuser()}"
        decided = await decide(store, example_id, decision, reviewer=who, note=note, may_use=lambda _: True)
        typer.echo(f"example {decided.id} is {decided.status} (by {decided.reviewed_by})")
    _run(config, work)


@app.command()
def approve(
    example_id: Annotated[int, typer.Argument(help="The example's id (see `examples list`).", min=1)],
    note: NoteOption = None, reviewer: ReviewerOption = None, config: ConfigOption = None,
) -> None:
    """Approve a proposed example: it is used from now on, while the rules still allow its SQL."""
    _decide(example_id, "approved", note, reviewer, config)


@app.command()
def reject(
    example_id: Annotated[int, typer.Argument(help="The example's id (see `examples list`).", min=1)],
    note: NoteOption = None, reviewer: ReviewerOption = None, config: ConfigOption = None,
) -> None:
    """Reject a proposed example, or withdraw an approved one; its correction leaves MAGIC's queue."""
    _decide(example_id, "rejected", note, reviewer, config)
