"""The one place a command turns its ``--config`` option into :class:`~gateway.settings.Settings`.

Its own module, below the main app and every sub-command, so that a sub-command reads the settings the same
way as the main app without importing it (which imported the sub-commands: a cycle).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from gateway.settings import ConfigError, Settings, load_settings

DEMO_DATABASE = "demo"


def settings_from(config: Path | None, **overrides: Any) -> Settings:
    """The settings from ``config`` (else the usual lookup), exiting with status 2 on a configuration error."""
    if config is not None:
        import os

        os.environ["NL2SQL_CONFIG"] = str(config)
    try:
        return load_settings(**overrides)
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from exc
