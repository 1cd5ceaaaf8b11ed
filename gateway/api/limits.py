"""The per-key rate limit as a FastAPI dependency, run on every route after authentication.

It sits after :func:`gateway.auth.access.authorize` (FastAPI runs that once per request and hands this
dependency the same principal): an authenticated request spends a token from its API key's bucket, with
its role's limit (``backpressure.roles``), and one from its end user's bucket when a user asks
(:meth:`gateway.backpressure.RateLimits.check_principal`; in the store with ``backpressure.shared``,
:mod:`gateway.shared_limits`); with auth off the bucket is the client's address. Probes and
scrapes are never limited. The in-flight bound lives in the middleware instead, because it must refuse
before anything else runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gateway.api.middleware import UNBOUNDED_PATHS
from gateway.auth.access import authorize
from gateway.auth.keys import Principal


async def rate_limit(request: Request, principal: Annotated[Principal, Depends(authorize)]) -> None:
    limits = getattr(request.app.state.gateway, "rate_limits", None)
    if limits is None or not limits.enabled:
        return
    path = getattr(request.scope.get("route"), "path", None)  # not request.url: it parses the whole URL
    if (path if path is not None else request.url.path) in UNBOUNDED_PATHS:
        return
    client = request.client
    await limits.admit(principal, client.host if client else "unknown")
