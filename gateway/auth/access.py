"""Which role each route needs, and the FastAPI dependency that enforces it on every route.

Deny by default: a route that is neither public nor listed in :data:`ROUTE_ROLES` needs ``admin``, so a new
endpoint is closed until someone decides who may call it. Databases named in a request body are checked by
the route itself with :meth:`Principal.check_database` (the dependency cannot see a parsed body).
"""

from __future__ import annotations

import structlog
from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gateway import errors
from gateway.auth.keys import Principal, Role
from gateway.auth.resource import METADATA_PATHS

# Probes and Prometheus must work without a key; keep /metrics off the public network (see docs). The OAuth
# protected-resource metadata (RFC 9728) is how a client without a token learns where to get one, and the
# console's sign-in options must be readable before anyone has signed in: a client id and the identity
# provider's public endpoints, nothing else (gateway.api.console).
PUBLIC_ROUTES = frozenset({"/healthz", "/readyz", "/metrics", "/console/config.json", *METADATA_PATHS})

# Path templates as routes declare them; a prefix entry ends with "*".
ROUTE_ROLES: dict[str, Role] = {
    "/v1/ask": Role.CLIENT,
    "/v1/sql": Role.CLIENT,
    "/v1/check": Role.CLIENT,
    "/v1/feedback": Role.CLIENT,
    "/v1/databases": Role.CLIENT,
    "/v1/databases/{name}/schema": Role.DBA,
    "/v1/databases/{name}/rules": Role.DBA,  # names what the rules hide
    "/v1/databases/{name}/rules/console": Role.DBA,  # edits them (gateway.Gateway.edit_rules decides too)
    "/v1/databases/{name}/starters": Role.CLIENT,  # verified questions (none under a row policy)
    "/v1/history": Role.CLIENT,  # the caller's own answers (gateway.history decides who sees what)
    "/v1/answers/{request_id}": Role.CLIENT,
    "/v1/about": Role.CLIENT,  # version, uptime, LLM model (its endpoint for dba and admin only)
    "/v1/databases/{name}/semantic": Role.CLIENT,  # metric definitions, what the rules hide left out
    "/v1/whoami": Role.CLIENT,  # a key learns its own role and databases, nothing about others
    "/v1/guidelines*": Role.DBA,
    "/v1/examples*": Role.DBA,  # reviewing what clients teach (gateway.review)
    # Listing and running are for every key; Gateway refuses creating, deleting and suggestions below dba.
    "/v1/templates*": Role.CLIENT,
}

class _DeclaredBearer(HTTPBearer):
    """Documents the scheme in OpenAPI, and only that: the header itself is parsed by the authenticator (in
    the HTTP middleware, or in :func:`authorize`), for precise messages. HTTPBearer's own parsing built the
    request's header map on every request for a value nothing read."""

    async def __call__(self, request: Request) -> HTTPAuthorizationCredentials | None:  # type: ignore[override]
        return None


_bearer = _DeclaredBearer(
    auto_error=False, scheme_name="ApiKey",
    description="An API key from `nl2sql-gateway keys create`: `Authorization: Bearer nl2sql_...`")


def required_role(path: str) -> Role | None:
    """The least role a route needs; None for public routes."""
    if path in PUBLIC_ROUTES:
        return None
    if path in ROUTE_ROLES:
        return ROUTE_ROLES[path]
    for pattern, role in ROUTE_ROLES.items():
        if pattern.endswith("*") and path.startswith(pattern[:-1]):
            return role
    return Role.ADMIN


async def authorize(request: Request, _: HTTPAuthorizationCredentials | None = Security(_bearer)) -> Principal:
    """Authenticate the caller and check the route's role; the principal is reused by routes that ask."""
    route = request.scope.get("route")
    path = getattr(route, "path", None)  # request.url only without a route: it parses the whole URL
    role = required_role(path if path is not None else request.url.path)
    if role is None:
        return Principal(name="public", role=Role.CLIENT, databases=frozenset())
    authenticator = request.app.state.gateway.auth
    if authenticator is None:  # an open Gateway always sets it; failing closed beats serving unauthenticated
        raise errors.GatewayError("access control is not initialised")
    # The HTTP middleware authenticates before a request takes an in-flight slot and leaves the principal in
    # the request's state; a request that reached the app some other way is authenticated here.
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None:
        principal = await authenticator.authenticate(request.headers.get("authorization"))
    principal.check_role(role)
    request.state.principal = principal  # for per-key limits downstream
    # The request's log line names the key and the end user (a stable id, never an e-mail).
    structlog.contextvars.bind_contextvars(api_key=principal.key_id, user=principal.user)
    return principal
