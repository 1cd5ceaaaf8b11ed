"""The one place where errors become ``application/problem+json`` responses (RFC 9457).

Every problem carries ``type``, ``title``, ``status``, ``detail``, a stable machine ``code`` and the
request id; a :class:`~gateway.errors.GatewayError`'s ``extra`` fields (findings, SQLSTATE, position, the
setting to change) are added as members.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import Scope

from gateway import errors
from gateway.auth.resource import Challenge, challenge, host_of
from gateway.observability import metrics
from gateway.observability.logging import get_logger

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "https://nl2sql-gateway.dev/problems/"
log = get_logger(__name__)


def problem_response(error: errors.GatewayError, request_id: str | None = None, *,
                     challenge: Challenge | None = None) -> Response:
    """The problem response for ``error``; ``challenge`` (with ``[auth.oidc]``) extends a 401's or 403
    ``insufficient_scope``'s ``WWW-Authenticate`` for OAuth clients (see :func:`www_authenticate`)."""
    body: dict[str, Any] = {
        "type": TYPE_BASE + error.code,
        "title": error.title,
        "status": error.status,
        "detail": error.detail,
        "code": error.code,
    }
    if request_id:
        body["request_id"] = request_id
    metrics.PROBLEMS.labels(code=error.code).inc()
    body.update({k: v for k, v in error.extra.items() if k not in body})
    # X-Request-ID is added by the middleware to every response, problems included.
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after else {}
    headers.update(error.headers)
    if "WWW-Authenticate" in headers:
        headers["WWW-Authenticate"] = www_authenticate(error, challenge)
    return Response(json.dumps(body, default=str), status_code=error.status, media_type=PROBLEM_JSON, headers=headers)


def www_authenticate(error: errors.GatewayError, challenge: Challenge | None) -> str:
    """RFC 6750 section 3 and RFC 9728 section 5.1: the error class's challenge, plus the ``scope`` to ask
    for and, for OAuth clients, ``resource_metadata``. MCP clients start (401) or step up (403
    ``insufficient_scope``) their authorization from it:
    ``Bearer realm="nl2sql-gateway", error="invalid_token", scope="...", resource_metadata="https://..."``."""
    value = error.headers["WWW-Authenticate"]
    scope = " ".join(str(s) for s in error.extra.get("required_scopes") or ())
    if not scope and challenge is not None and error.status == 401:
        scope = challenge.scope
    if scope:
        value += f', scope="{scope}"'
    if challenge is not None:
        value += f', resource_metadata="{challenge.metadata_url}"'
    return value


def challenge_of(scope: Scope) -> Challenge | None:
    """The OAuth challenge for a request to this app (None without ``[auth.oidc]``)."""
    app = scope.get("app")
    auth = getattr(getattr(getattr(app, "state", None), "gateway", None), "auth", None)
    settings = getattr(getattr(auth, "settings", None), "oidc", None)
    return challenge(settings, scope.get("scheme", "http"), host_of(scope["headers"]))


def _request_id(request: Request) -> str | None:
    return getattr(request.state, "request_id", None)


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.GatewayError)
    return problem_response(exc, _request_id(request),
                            challenge=challenge_of(request.scope) if "WWW-Authenticate" in exc.headers else None)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    issues = exc.errors()
    if any(issue.get("type") == "json_invalid" for issue in issues):
        error: errors.GatewayError = errors.MalformedBody(
            "the request body is not valid JSON: " + "; ".join(str(i.get("msg", "")) for i in issues)
        )
    else:
        error = errors.InvalidRequest(
            "; ".join(f"{'.'.join(str(p) for p in i.get('loc', ()))}: {i.get('msg')}" for i in issues),
            errors=[{"loc": list(i.get("loc", ())), "msg": i.get("msg"), "type": i.get("type")} for i in issues],
        )
    return problem_response(error, _request_id(request))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    mapping: dict[int, type[errors.GatewayError]] = {
        404: errors.NotFound, 405: errors.MethodNotAllowed, 413: errors.PayloadTooLarge,
        415: errors.UnsupportedMediaType, 401: errors.Unauthorized, 403: errors.Forbidden,
    }
    cls = mapping.get(exc.status_code, errors.BadRequest)
    return problem_response(cls(str(exc.detail)), _request_id(request))


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.error("unhandled_error", error=repr(exc), exc_info=exc)
    error = errors.GatewayError("an unexpected error occurred; it has been logged")
    return problem_response(error, _request_id(request))


def install(app: FastAPI) -> None:
    app.add_exception_handler(errors.GatewayError, _gateway_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


def openapi_responses(*classes: type[errors.GatewayError]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries naming the problem codes a route can return."""
    by_status: dict[int, list[str]] = {}
    for cls in classes:
        by_status.setdefault(cls.status, []).append(cls.code)
    return {
        status: {
            "description": "Problem: " + ", ".join(f"`{c}`" for c in codes),
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status, codes in sorted(by_status.items())
    }
