"""``GET /.well-known/oauth-protected-resource[/mcp]``: the gateway's OAuth protected-resource metadata
(RFC 9728), public, served only with ``[auth.oidc]`` (404 otherwise). See :mod:`gateway.auth.resource`."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway import errors
from gateway.auth.resource import METADATA_PATHS, host_of, metadata, resource_url
from gateway.service import Gateway

router = APIRouter(tags=["access"])


async def protected_resource(request: Request) -> Response:
    gateway: Gateway = request.app.state.service
    settings = gateway.oidc() if gateway.auth_enabled() else None
    if settings is None:
        raise errors.NotFound("this gateway accepts no OAuth access tokens ([auth.oidc] is not configured)")
    resource = resource_url(settings, request.scope.get("scheme", "http"), host_of(request.scope["headers"]))
    if resource is None:
        raise errors.BadRequest("the Host header does not name this gateway; set auth.oidc.resource_url")
    # Derived from Host, the document differs per name the gateway is reached by: no shared cache may keep it.
    cache = "public, max-age=3600" if settings.resource_url else "no-store"
    return Response(json.dumps(metadata(settings, resource)), media_type="application/json",
                    headers={"Cache-Control": cache})


for _path in METADATA_PATHS:
    router.add_api_route(_path, protected_resource, methods=["GET"], include_in_schema=False)
