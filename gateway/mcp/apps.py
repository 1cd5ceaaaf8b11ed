"""MCP Apps: ``run_sql`` and ``ask`` results shown as a table and a chart inside the clients that render apps.

The MCP Apps extension (``io.modelcontextprotocol/ui``, the SDK's :mod:`mcp.server.apps`) lets a tool name a
``ui://`` resource in its ``_meta.ui.resourceUri``; a host that supports it reads that resource (an HTML
document, ``text/html;profile=mcp-app``), renders it in a sandboxed iframe and hands it the tool's result
over ``postMessage``. The gateway serves one such view, :data:`ANSWER_URI`: a self-contained page (its own
script and style, no CDN, no network) that draws the result's columns and rows as a table and, when the
result has a label and a numeric column (or a numeric or time dimension and a measure), as a bar or line
chart, plus the SQL and the status of an ``ask``. Every value is set as text, never as markup: rows are data
from the database.

Nothing changes for other clients: the tool result (text and ``structuredContent``) is the same, the link is
only metadata.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

__all__ = ["ANSWER_URI", "APP_MIME_TYPE", "EXTENSION_ID", "answer_view", "resource_meta", "tool_meta"]

ANSWER_URI = "ui://nl2sql/answer.html"
TITLE = "Answer view"
DESCRIPTION = ("The table and chart MCP Apps hosts show for a run_sql or ask result (no data of its own: the "
               "host hands it the tool's result).")


def tool_meta() -> dict[str, Any]:
    """The ``_meta`` that links a tool to the answer view."""
    return {"ui": {"resourceUri": ANSWER_URI}}


def answer_view() -> str:
    """The view's HTML (read from the package, so it ships in the wheel)."""
    return resources.files("gateway.mcp").joinpath("answer.html").read_text(encoding="utf-8")


def resource_meta() -> dict[str, Any]:
    """``_meta.ui`` of the resource: it loads nothing from anywhere (an empty CSP allow-list) and wants the
    host's border around it."""
    return {"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}}
