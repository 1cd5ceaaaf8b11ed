"""The release this package is (pyproject.toml's ``version``).

A module of its own so that what reports it (``Gateway.status``, the HTTP app, the MCP server, the CLI) imports
it without importing the package face, ``gateway/__init__.py``, whose ``gateway.Gateway`` imports them back.
"""

from __future__ import annotations

__version__ = "0.1.0"
