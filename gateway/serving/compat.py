"""The framework internals the serving package relies on, checked once per process against what is installed.

The fast paths mirror private parts of FastAPI and uvicorn (every framework upgrade may move them). Each
asks here first; a check that fails names what is missing, the path turns itself off with one warning
(``serving_fallback``) and requests take the framework's own, public path, with the same answers
(tests/api/test_serving_fallback.py removes each internal and compares):

- compiled routes (:mod:`gateway.serving.fastpath`): FastAPI's route and dependency shapes and its response
  rendering (``fastapi.routing.serialize_response``); missing: every request is routed by FastAPI;
- the ``__call__`` shortcut (:class:`gateway.serving.app.GatewayApp`): FastAPI's native telemetry switch;
  missing: ``FastAPI.__call__`` runs as it is;
- the bounded protocol (:mod:`gateway.serving.server`): uvicorn's httptools protocol and its response cycle;
  missing: uvicorn's h11 protocol with ``server.max_header_bytes`` as its incomplete-event bound (the header
  timeout is then not enforced by the server: the warning says so).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pydantic
from fastapi import Depends
from starlette.requests import Request

from gateway.observability.logging import get_logger

log = get_logger("gateway.serving")

# What compile_route and the renderer read on a FastAPI route and its dependant.
ROUTE_ATTRIBUTES = ("dependant", "endpoint", "dependency_overrides_provider", "response_class", "response_field",
                    "status_code", "response_model_include", "response_model_exclude", "response_model_by_alias",
                    "response_model_exclude_unset", "response_model_exclude_defaults",
                    "response_model_exclude_none", "path_format", "methods")
DEPENDANT_ATTRIBUTES = ("dependencies", "call", "name", "use_cache", "body_params", "path_params", "query_params",
                        "header_params", "cookie_params", "request_param_name", "http_connection_param_name")
# What BoundedHttpProtocol overrides on uvicorn's httptools protocol, and reads on its response cycle.
PROTOCOL_METHODS = ("connection_made", "connection_lost", "data_received", "on_message_begin",
                    "on_headers_complete", "on_message_complete", "on_response_complete")
CYCLE_ATTRIBUTES = ("transport", "on_response", "more_body", "response_complete", "response_started",
                    "chunked_encoding", "scope")


def fallback(component: str, missing: str) -> None:
    """The one log line of a fast path that turned itself off."""
    log.warning("serving_fallback", component=component, missing=missing,
                detail="the installed framework lacks an internal this fast path mirrors; requests take "
                       "the framework's own path")


@functools.cache
def fastpath_missing() -> str | None:
    """None when compiled routes can mirror the installed FastAPI; else the first internal missing (logged)."""
    missing = _fastpath_missing()
    if missing is not None:
        fallback("compiled_routes", missing)
    return missing


def _fastpath_missing() -> str | None:
    from fastapi import routing

    render = getattr(routing, "serialize_response", None)
    if render is None or "dump_json" not in inspect.signature(render).parameters:
        return "fastapi.routing.serialize_response(dump_json=...)"
    if not callable(getattr(routing, "is_body_allowed_for_status_code", None)):
        return "fastapi.routing.is_body_allowed_for_status_code"
    try:
        from fastapi.datastructures import DefaultPlaceholder  # noqa: F401 - only its presence is checked
    except ImportError:
        return "fastapi.datastructures.DefaultPlaceholder"
    route = _probe_route()
    for name in ROUTE_ATTRIBUTES:
        if not hasattr(route, name):
            return f"fastapi.routing.APIRoute.{name}"
    for name in DEPENDANT_ATTRIBUTES:
        if not hasattr(route.dependant, name):
            return f"fastapi.dependencies.models.Dependant.{name}"
    body = route.dependant.body_params
    if len(body) != 1 or not hasattr(body[0], "field_info") or not hasattr(body[0], "name"):
        return "fastapi.dependencies.models.Dependant.body_params[].field_info"
    return None


def _probe_route() -> Any:
    """A route of the shape compiled routes serve, built by the installed FastAPI."""
    from fastapi.routing import APIRoute

    return APIRoute("/probe", _probe_endpoint, methods=["POST"])


class _ProbeBody(pydantic.BaseModel):
    value: int


async def _probe_dependency(request: Request) -> None:
    return None


async def _probe_endpoint(body: _ProbeBody, _: None = Depends(_probe_dependency)) -> dict[str, int]:
    return {"value": body.value}


@functools.cache
def telemetry_switch_missing() -> str | None:
    """None when FastAPI's ``__call__`` has the shape GatewayApp shortcuts (its native telemetry switch)."""
    from fastapi import FastAPI

    source = _source(FastAPI.__call__)
    if "_native_telemetry" not in source or "fastapi.telemetry" not in source:
        fallback("telemetry_switch", "FastAPI._native_telemetry")
        return "FastAPI._native_telemetry"
    return None


@functools.cache
def protocol_missing() -> str | None:
    """None when BoundedHttpProtocol can extend the installed uvicorn's httptools protocol (logged if not)."""
    missing = _protocol_missing()
    if missing is not None:
        fallback("bounded_protocol", f"{missing}; server.header_timeout_s is not enforced by the server")
    return missing


def _protocol_missing() -> str | None:
    try:
        from uvicorn.protocols.http import httptools_impl
    except ImportError:  # httptools not installed
        return "uvicorn.protocols.http.httptools_impl"
    protocol = getattr(httptools_impl, "HttpToolsProtocol", None)
    cycle = getattr(httptools_impl, "RequestResponseCycle", None)
    if protocol is None or cycle is None:
        return "uvicorn.protocols.http.httptools_impl.HttpToolsProtocol"
    for name in PROTOCOL_METHODS:
        if not callable(getattr(protocol, name, None)):
            return f"HttpToolsProtocol.{name}"
    source = _source(cycle)
    for name in CYCLE_ATTRIBUTES:
        if f"self.{name}" not in source:
            return f"RequestResponseCycle.{name}"
    if "self.cycle" not in _source(protocol):
        return "HttpToolsProtocol.cycle"
    return None


def _source(thing: Any) -> str:
    try:
        return inspect.getsource(thing)
    except (OSError, TypeError):  # no source installed: nothing can be confirmed
        return ""
