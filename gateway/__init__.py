"""nl2sql-gateway: a read-only SQL gateway between natural-language clients and PostgreSQL.

The Python API is :class:`Gateway` (see :mod:`gateway.service`), opened from :func:`load_settings`.
Both are imported on first use, so ``import gateway`` (and the CLI's ``--help``) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.config.version import __version__

__all__ = ["Gateway", "__version__", "load_settings"]

if TYPE_CHECKING:
    from gateway.service import Gateway
    from gateway.settings import load_settings


def __getattr__(name: str) -> Any:
    if name == "Gateway":
        from gateway.service import Gateway

        return Gateway
    if name == "load_settings":
        from gateway.settings import load_settings

        return load_settings
    raise AttributeError(f"module 'gateway' has no attribute {name!r}")
