"""The per-key rate limit as a FastAPI dependency, run on every route after authentication.

It sits after :func:`gateway.auth.access.authorize` (FastAPI runs that once per request and hands this
dependency the same principal): an authenticated request spends a token from its API key's bucket, with
its role's limit (``backpressure.roles``), and one from its end user's bucket when a user asks
(:meth:`gateway.serving.backpressure.RateLimits.check_principal`; in the store with ``backpressure.shared``,
:mod:`gateway.serving.shared_limits`); with auth off the bucket is the client's address. Probes and
scrapes are never limited. The in-flight bound lives in the middleware instead, because it must refuse
before anything else runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gateway.auth.access import authorize
from gateway.auth.keys import Principal
from gateway.service import Gateway
from gateway.serving.admission import UNBOUNDED_PATHS


async def rate_limit(request: Request, principal: Annotated[Principal, Depends(authorize)]) -> None:
    path = getattr(request.scope.get("route"), "path", None)  # not request.url: it parses the whole URL
    if (path if path is not None else request.url.path) in UNBOUNDED_PATHS:
        return
    gateway: Gateway = request.app.state.service
    client = request.client
    await gateway.admit(principal, client.host if client else "unknown")  # nothing when no limit is set
