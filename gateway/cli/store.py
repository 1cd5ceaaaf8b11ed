"""``nl2sql-gateway migrate``: bring the store's schema up to date (the server also does it at start-up)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from gateway import errors
from gateway.cli.load import load
from gateway.service import Gateway
from gateway.serving import deadline as request_deadline


def migrate(
    status: Annotated[bool, typer.Option("--status", help="Only list the migrations and whether each is "
                                         "applied.")] = False,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.", exists=True,
                                                   dir_okay=False, envvar="NL2SQL_CONFIG")] = None,
) -> None:
    """Apply the store's pending migrations (numbered .sql files), one transaction each, under an advisory lock."""
    settings = load(config)
    if not settings.store.dsn:
        typer.echo("store.dsn is not set (NL2SQL_STORE__DSN)", err=True)
        raise typer.Exit(2)
    try:
        applied, states = asyncio.run(request_deadline.operation(
            settings.server.operation_timeout_s, Gateway.migrate_store(settings, apply=not status), "migrate"))
    except errors.GatewayError as exc:
        typer.echo(f"migration failed: {exc}", err=True)
        raise typer.Exit(1) from exc
    if not status:
        typer.echo(f"applied {len(applied)} migration(s): {applied}" if applied else "up to date")
    for version, name, done in states:
        typer.echo(f"{version:04d} {name:<30} {'applied' if done else 'pending'}")
