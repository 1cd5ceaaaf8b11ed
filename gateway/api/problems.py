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

from gateway import errors
from gateway.observability.logging import get_logger

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "https://nl2sql-gateway.dev/problems/"
log = get_logger(__name__)


def problem_response(error: errors.GatewayError, request_id: str | None = None) -> Response:
    body: dict[str, Any] = {
        "type": TYPE_BASE + error.code,
        "title": error.title,
        "status": error.status,
        "detail": error.detail,
        "code": error.code,
    }
    if request_id:
        body["request_id"] = request_id
    body.update({k: v for k, v in error.extra.items() if k not in body})
    # X-Request-ID is added by the middleware to every response, problems included.
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after else {}
    headers.update(error.headers)
    return Response(json.dumps(body, default=str), status_code=error.status, media_type=PROBLEM_JSON, headers=headers)


def _request_id(request: Request) -> str | None:
    return getattr(request.state, "request_id", None)


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.GatewayError)
    return problem_response(exc, _request_id(request))


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
