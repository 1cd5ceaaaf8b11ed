"""How every ``nl2sql-gateway`` command turns its ``--config`` option into :class:`~gateway.settings.Settings`.

One module below the command modules (``gateway.cli.main`` and each sub-command's ``cli``), so that none of them
imports another to load its settings (that was an import cycle), and the path given is passed to
:func:`~gateway.settings.load_settings` rather than exported into ``os.environ`` for whatever runs next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gateway.settings import ConfigError, Settings, load_settings

__all__ = ["DEMO_DATABASE", "ConfigOption", "load"]

DEMO_DATABASE = "demo"  # the shipped demo's database: rule and semantic files ship for it

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="TOML config file (default: $NL2SQL_CONFIG or ./nl2sql-gateway.toml).",
                 exists=True, dir_okay=False, envvar="NL2SQL_CONFIG"),
]


def load(config: Path | None, **overrides: Any) -> Settings:
    """The settings from ``config`` (None: ``$NL2SQL_CONFIG`` or ``./nl2sql-gateway.toml``), the environment
    and ``overrides``; a configuration error is printed and exits with status 2."""
    try:
        return load_settings(config, **overrides)
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from exc
