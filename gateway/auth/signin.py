"""What a browser needs to sign an end user in to the console: the console's OAuth client and the
authorization server's endpoints, taken from its metadata (discovery).

The console runs the authorization-code flow with PKCE in the page itself (a public client, no secret), so
the endpoints it is told about are where it sends the user and posts the code: each must be ``https`` (plain
``http`` only to a loopback host, for tests and local use) without credentials or a fragment. The origins
of the endpoints the page calls with ``fetch`` (token, revocation) go into the console's content security
policy, so they are checked strictly: a metadata document cannot add a directive or a wildcard to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gateway import errors
from gateway.auth.authenticator import Authenticator, is_loopback
from gateway.auth.oidc import OidcValidator

# scheme://host[:port]: what a CSP source expression may hold here, nothing else (no spaces, ';', ',', '*').
_ORIGIN = re.compile(r"https?://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?")


@dataclass(frozen=True, slots=True)
class ConsoleSignIn:
    """The console's sign-in with the identity provider, as ``GET /console/config.json`` publishes it."""

    issuer: str
    client_id: str
    authorization_endpoint: str
    token_endpoint: str
    revocation_endpoint: str | None
    scopes: tuple[str, ...]
    resource: str | None

    def public(self) -> dict[str, Any]:
        return {"issuer": self.issuer, "client_id": self.client_id,
                "authorization_endpoint": self.authorization_endpoint, "token_endpoint": self.token_endpoint,
                "revocation_endpoint": self.revocation_endpoint, "scopes": list(self.scopes),
                "resource": self.resource}

    @property
    def connect_origins(self) -> tuple[str, ...]:
        """Origins the page calls with ``fetch`` (the authorization endpoint is a navigation, not a fetch)."""
        urls = [self.token_endpoint, *([self.revocation_endpoint] if self.revocation_endpoint else [])]
        return tuple(dict.fromkeys(origin(url) for url in urls))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a checked endpoint URL.

    >>> origin("https://login.example.com/realms/acme/token")
    'https://login.example.com'
    >>> origin("http://127.0.0.1:8123/token")
    'http://127.0.0.1:8123'
    """
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def endpoint(metadata: dict[str, Any], name: str) -> str:
    """The metadata's ``name`` URL, if a browser may be sent there; else ``idp_unavailable`` naming why.

    >>> endpoint({"token_endpoint": "https://idp.example.com/token"}, "token_endpoint")
    'https://idp.example.com/token'
    >>> endpoint({"token_endpoint": "http://idp.example.com/token"}, "token_endpoint")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gateway.errors.IdentityProviderUnavailable: the authorization server's token_endpoint is not an https URL...
    """
    url = metadata.get(name)
    if not isinstance(url, str) or not url:
        raise errors.IdentityProviderUnavailable(f"the authorization server's metadata has no {name}")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a port out of range
    except ValueError:
        raise errors.IdentityProviderUnavailable(f"the authorization server's {name} is not a URL") from None
    secure = parts.scheme == "https" or (parts.scheme == "http" and is_loopback(host))
    if not secure:
        raise errors.IdentityProviderUnavailable(f"the authorization server's {name} is not an https URL "
                                                 "(plain http only to a loopback host)")
    if parts.username is not None or parts.password is not None or parts.fragment or "#" in url:
        raise errors.IdentityProviderUnavailable(f"the authorization server's {name} carries credentials or "
                                                 "a fragment")
    if not _ORIGIN.fullmatch(origin(url)) or any(c.isspace() or c in "'\";," for c in url):
        raise errors.IdentityProviderUnavailable(f"the authorization server's {name} is not a plain URL")
    return url


async def console_sign_in(auth: Authenticator | None) -> ConsoleSignIn | None:
    """The console's sign-in with the identity provider; None when it signs in with API keys only (access
    control off, no ``[auth.oidc]``, or no ``auth.oidc.console_client_id``). The endpoints come from the
    authorization server's metadata (cached by the validator); 503 ``idp_unavailable`` when it is unknown."""
    if auth is None or not auth.settings.enabled or auth.oidc is None:
        return None
    return await _from(auth.oidc)


async def _from(validator: OidcValidator) -> ConsoleSignIn | None:
    settings = validator.settings
    if not settings.console_client_id:
        return None
    metadata = await validator.metadata()
    revocation = endpoint(metadata, "revocation_endpoint") if metadata.get("revocation_endpoint") else None
    return ConsoleSignIn(
        issuer=settings.issuer, client_id=settings.console_client_id,
        authorization_endpoint=endpoint(metadata, "authorization_endpoint"),
        token_endpoint=endpoint(metadata, "token_endpoint"), revocation_endpoint=revocation,
        scopes=tuple(settings.console_scope_list), resource=settings.console_resource)
