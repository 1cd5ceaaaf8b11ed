"""The gateway as an OAuth protected resource (RFC 9728), for clients that find their authorization server
themselves: remote MCP connectors (ChatGPT, Claude, Cursor, Dify) attach a server only this way.

With ``[auth.oidc]`` the gateway publishes its metadata at ``/.well-known/oauth-protected-resource`` and at
the path-suffixed ``/.well-known/oauth-protected-resource/mcp`` that clients derive from the resource URL
``https://host/mcp`` (RFC 9728 section 3.1); both describe the same resource, since one audience covers the
whole gateway. A 401 (and a 403 ``insufficient_scope``) then carries ``resource_metadata="<that URL>"`` in
its ``WWW-Authenticate`` challenge (:class:`Challenge`, rendered by gateway.api.problems), which is how an MCP
client starts the authorization-code flow.

The resource URL is ``auth.oidc.resource_url``, or else derived from the request (its scheme and ``Host``
plus ``/mcp``): fine on loopback and behind a proxy that keeps ``Host``, but a deployment should set it, as
tokens are issued for it (``resource`` is what RFC 8707 clients ask the authorization server for, and so the
``aud`` of their tokens: ``auth.oidc.audience`` must accept it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gateway.settings import OidcSettings

WELL_KNOWN = "/.well-known/oauth-protected-resource"
RESOURCE_PATH = "/mcp"  # gateway.mcp.http.PATH: what remote MCP clients connect to
METADATA_PATHS = (WELL_KNOWN, WELL_KNOWN + RESOURCE_PATH)

# A Host header fit to be echoed in a URL and a quoted header parameter: a name or an IP literal, a port.
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$")


@dataclass(frozen=True, slots=True)
class Challenge:
    """What a 401/403 challenge adds for an OAuth client: where the metadata is, which scopes to ask for."""

    metadata_url: str
    scope: str  # a 401's suggestion: the scopes a client should ask for (the metadata's scopes_supported)


def resource_url(settings: OidcSettings, scheme: str, host: str | None) -> str | None:
    """The protected resource's URL: configured, else ``<scheme>://<Host>/mcp``; None for an unusable Host."""
    if settings.resource_url:
        return settings.resource_url
    if not host or not _HOST.match(host) or scheme not in {"http", "https"}:
        return None
    return f"{scheme}://{host}{RESOURCE_PATH}"


def metadata_url(resource: str) -> str:
    """RFC 9728 section 3.1: the well-known segment goes between the host and the resource's path."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"


def metadata(settings: OidcSettings, resource: str) -> dict[str, Any]:
    """The RFC 9728 document (the fields the MCP SDK's ``ProtectedResourceMetadata`` reads)."""
    return {
        "resource": resource,
        "authorization_servers": settings.resource_authorization_servers,
        "scopes_supported": settings.resource_scopes,
        "bearer_methods_supported": ["header"],  # never a query parameter or form body: they end up in logs
        "resource_name": "nl2sql-gateway",
    }


def challenge(settings: OidcSettings | None, scheme: str, host: str | None) -> Challenge | None:
    """The challenge for a request to this gateway, or None (no ``[auth.oidc]``, or no usable resource URL)."""
    if settings is None:
        return None
    resource = resource_url(settings, scheme, host)
    if resource is None:
        return None
    return Challenge(metadata_url(resource), " ".join(settings.resource_scopes))


def host_of(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The request's ``Host`` (ASGI headers); None when absent or repeated."""
    found = [value for name, value in headers if name == b"host"]
    return found[0].decode("latin-1") if len(found) == 1 else None
