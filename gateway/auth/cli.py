"""``nl2sql-gateway keys create|list|revoke``: manage API keys in the store.

``create`` prints the token once, on stdout alone (so ``TOKEN=$(nl2sql-gateway keys create ...)`` works);
the store keeps only the SHA-256 of its secret, so a lost token cannot be shown again: revoke it and create
another. Running gateways notice a revocation within ``auth.cache_ttl_s``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from gateway import deadline as request_deadline
from gateway import errors
from gateway.auth.keys import ALL_DATABASES, Role, new_token
from gateway.cli_style import CLI_STYLE
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.store import Store

T = TypeVar("T")

app = typer.Typer(**CLI_STYLE, name="keys", help="Create, list and revoke the API keys clients send as bearer tokens.",
                  no_args_is_help=True)

# Set by gateway.cli before a command runs: how to load the settings (the --config option lives there).
def _default_load(config: Path | None) -> Settings:
    return Settings()


load: Callable[[Path | None], Settings] = _default_load

ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.", exists=True,
                                                      dir_okay=False, envvar="NL2SQL_CONFIG")]


def _with_store(settings: Settings, work: Callable[[Store], Awaitable[T]]) -> T:
    from gateway.store import Store

    async def run() -> T:
        store = await Store.open(settings.store, apply_migrations=settings.store.migrate_on_start)
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        return asyncio.run(request_deadline.operation(
                settings.server.operation_timeout_s, run(), "the keys command"))
    except errors.GatewayError as exc:
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        raise typer.Exit(1) from exc


def _databases(value: str, settings: Settings) -> list[str]:
    names = sorted({n.strip() for n in value.split(",") if n.strip()})
    if not names:
        raise typer.BadParameter("name at least one database, or '*' for all", param_hint="--databases")
    if ALL_DATABASES in names:
        return [ALL_DATABASES]
    unknown = [n for n in names if n not in settings.databases]
    if unknown:
        known = ", ".join(sorted(settings.databases)) or "none configured"
        raise typer.BadParameter(f"not configured: {', '.join(unknown)} (known: {known})", param_hint="--databases")
    return names


@app.command()
def create(
    name: Annotated[str, typer.Option(help="Who or what the key is for (unique among active keys).")],
    role: Annotated[Role, typer.Option(help="client: ask, sql, check, feedback; dba: also schema and "
                                       "guidelines; admin: everything.")],
    databases: Annotated[str, typer.Option(help="Comma-separated database names the key may use, or '*'.")],
    pg_role: Annotated[str | None, typer.Option("--pg-role", help="Postgres role assumed for this key's "
                                                   "queries (SET LOCAL ROLE); the gateway's login role must be a "
                                                   "member of it.")] = None,
    config: ConfigOption = None,
) -> None:
    """Create a key and print its token once (stdout); the store keeps only a hash of its secret."""
    from gateway.store import api_keys

    settings = load(config)
    allowed = _databases(databases, settings)
    if not name.strip() or (pg_role is not None and not pg_role.strip()):
        raise typer.BadParameter("--name and --pg-role must not be empty")
    token = new_token()

    async def work(store: Store) -> api_keys.StoredKey:
        return await api_keys.create(store.pool, key_id=token.key_id, name=name.strip(), role=role.value,
                                     databases=allowed, pg_role=pg_role, secret_sha256=token.secret_sha256)

    try:
        key = _with_store(settings, work)
    except api_keys.DuplicateKeyName as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"created key {key.id} ({key.name}, role {key.role}, databases {','.join(key.databases)}"
               f"{', Postgres role ' + key.pg_role if key.pg_role else ''}); the token is shown only now:", err=True)
    typer.echo(token.token)


@app.command(name="list")
def list_keys(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array instead of a table.")] = False,
    active: Annotated[bool, typer.Option("--active", help="Leave revoked keys out.")] = False,
    config: ConfigOption = None,
) -> None:
    """List keys (never their secrets): id, name, role, databases, Postgres role, created, revoked."""
    from gateway.store import api_keys

    settings = load(config)
    keys = _with_store(settings, lambda store: api_keys.list_all(store.pool, include_revoked=not active))
    rows = [k.summary() for k in keys]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(f"{'id':<12}  {'name':<20}  {'role':<6}  {'databases':<20}  {'pg_role':<16}  status")
    for r in rows:
        status = f"revoked {r['revoked_at']}" if r["revoked_at"] else "active"
        typer.echo(f"{r['id']:<12}  {r['name']:<20}  {r['role']:<6}  {','.join(r['databases']):<20}  "  # type: ignore[arg-type]
                   f"{r['pg_role'] or '-':<16}  {status}")


@app.command()
def revoke(
    key_id: Annotated[str, typer.Argument(metavar="ID", help="The key's id (the 12 hex characters after "
                                          "nl2sql_ in its token, as `keys list` shows).")],
    config: ConfigOption = None,
) -> None:
    """Revoke a key; gateways refuse it within auth.cache_ttl_s. Exit 1 when no active key has this id."""
    from gateway.store import api_keys

    settings = load(config)
    key = _with_store(settings, lambda store: api_keys.revoke(store.pool, key_id))
    if key is None:
        typer.echo(f"no active key with id {key_id!r}", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked key {key.id} ({key.name})")
