"""Compiled routes: the hot POST routes served without FastAPI's per-request routing and dependency solving.

FastAPI finds a route by trying every route in order, then solves its dependency tree generically on every
request (overrides, cache keys, scopes, generators, thread pools, exit stacks). For ``POST /v1/sql`` and the
benchmark's no-op route that machinery cost about as much CPU as everything else in the request together
(py-spy: routing 11%, ``solve_dependencies`` 22%, the request/response wrappers most of the rest).

:class:`FastRoutes` keeps an exact ``(method, path)`` table. It learns an entry from a request FastAPI itself
routed (so route precedence is FastAPI's own), and compiles it only when every part is of a shape it mirrors
exactly:

- dependencies that are ``async`` callables taking only the request and other dependencies, no scopes, no
  ``yield``, no parameters of their own; they run once each, in FastAPI's order, with its per-request cache;
- one JSON body, a pydantic model, sent with ``Content-Type: application/json`` exactly; it is validated
  straight from the bytes (``model_validate_json``);
- an ``async def`` endpoint on a path without parameters, returning a response or what FastAPI renders
  through the route's response model, no streaming or event-stream route, no route-level body limit.

Anything else falls back to FastAPI: routes not in the table or not compilable, dependency overrides (tests),
an app with FastAPI's native OpenTelemetry on (its spans come from FastAPI's own routing),
a body that does not validate (FastAPI then produces its own 422/400 and runs the dependencies in its order,
which is why the body is checked before any dependency runs here), duplicate headers. Errors raised by the
dependencies or the endpoint go through the app's own exception handlers (looked up as Starlette's
``ExceptionMiddleware`` does), so a problem response is the same on both paths; tests/api/test_fastpath.py
sends the same requests both ways and compares the answers. The table is dropped when
``app.router.routes`` changes.

The FastAPI internals read here (route and dependant attributes, ``fastapi.routing.serialize_response``) are
checked once against the installed FastAPI (:func:`gateway.serving.compat.fastpath_missing`): when one is
missing nothing is compiled, one warning says what, and every request takes FastAPI's path.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from fastapi import FastAPI, routing
from fastapi.datastructures import DefaultPlaceholder
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException, WebSocketException
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from gateway.serving.compat import fastpath_missing

_REQUEST = -1  # an argument that is the request itself, not a dependency's result
_JSON = b"application/json"
Handler = Callable[..., Any]  # (request, exc) -> response, sync or async


class _Unsupported(Exception):
    """A route of a shape the compiled path does not mirror: it stays with FastAPI."""


@dataclass(frozen=True, slots=True)
class _Step:
    call: Callable[..., Awaitable[Any]]
    args: tuple[tuple[str, int], ...]  # keyword -> index of an earlier step's result, or _REQUEST


@dataclass(frozen=True, slots=True)
class CompiledRoute:
    """One route, flattened: its dependency calls in FastAPI's order, then the endpoint."""

    route: Any  # what FastAPI puts in scope["route"] (the path template for logs, metrics and roles)
    steps: tuple[_Step, ...]
    endpoint: _Step
    body_name: str
    model: type[pydantic.BaseModel]
    overrides: Any  # the dependency_overrides_provider: overrides in use send requests to FastAPI
    render: Callable[[Any], Awaitable[Response]]


def _supported_call(call: Any) -> Callable[..., Awaitable[Any]]:
    """``async def`` functions and objects with an ``async def __call__`` (FastAPI's security schemes)."""
    if inspect.isasyncgenfunction(call) or inspect.isgeneratorfunction(call):
        raise _Unsupported("yield")
    if inspect.iscoroutinefunction(call):
        return call  # type: ignore[no-any-return]
    method = getattr(call, "__call__", None)  # noqa: B004 - the method itself is what is checked
    if not inspect.isfunction(call) and method is not None and inspect.iscoroutinefunction(method):
        return call  # type: ignore[no-any-return]
    raise _Unsupported("not an async callable")


def _check_plain(dependant: Any, *, body: bool = False) -> None:
    for kind in ("path_params", "query_params", "header_params", "cookie_params"):
        if getattr(dependant, kind, None):
            raise _Unsupported(kind)
    if getattr(dependant, "body_params", None) and not body:
        raise _Unsupported("body in a dependency")
    for kind in ("websocket_param_name", "response_param_name", "background_tasks_param_name",
                 "security_scopes_param_name"):
        if getattr(dependant, kind, None):
            raise _Unsupported(kind)
    if getattr(dependant, "own_oauth_scopes", None) or getattr(dependant, "parent_oauth_scopes", None):
        raise _Unsupported("oauth scopes")
    if getattr(dependant, "security_requirements", None) and any(
            getattr(r, "scopes", None) for r in dependant.security_requirements):
        raise _Unsupported("oauth scopes")
    if getattr(dependant, "concurrency", None) is not None:
        raise _Unsupported("concurrency limit")


def _request_args(dependant: Any) -> list[tuple[str, int]]:
    return [(name, _REQUEST) for name in (dependant.request_param_name, dependant.http_connection_param_name)
            if name]


def _flatten(dependant: Any, steps: list[_Step], cache: dict[Any, int]) -> list[tuple[str, int]]:
    """The arguments of ``dependant``'s call; its dependencies appended to ``steps`` as
    fastapi.dependencies.utils.solve_dependencies runs them (sub-dependencies first, each cached result
    reused, the first result kept)."""
    args: list[tuple[str, int]] = []
    for sub in dependant.dependencies:
        _check_plain(sub)
        call = _supported_call(sub.call)
        sub_args = _flatten(sub, steps, cache)  # solved even when ``sub`` itself is cached, as FastAPI does
        key = (sub.call, getattr(sub, "scope", None) or "")
        if sub.use_cache and key in cache:
            index = cache[key]
        else:
            index = len(steps)
            steps.append(_Step(call, tuple(sub_args)))
            cache.setdefault(key, index)
        if sub.name is not None:
            args.append((sub.name, index))
    return args + _request_args(dependant)


def _body_model(route: Any) -> tuple[str, type[pydantic.BaseModel]]:
    params = route.dependant.body_params
    if len(params) != 1 or getattr(route, "_embed_body_fields", False):
        raise _Unsupported("not one body")
    field = params[0]
    info = field.field_info
    model = info.annotation
    if not (inspect.isclass(model) and issubclass(model, pydantic.BaseModel)) or info.metadata \
            or not info.is_required():
        raise _Unsupported("body is not a plain model")
    return field.name, model


def _renderer(route: Any) -> Callable[[Any], Awaitable[Response]]:
    """What fastapi.routing.get_request_handler does with an endpoint's return value (no response
    parameter, no background tasks: both are refused above)."""
    response_class = route.response_class
    default_class = isinstance(response_class, DefaultPlaceholder)
    actual_class = response_class.value if default_class else response_class
    field = route.response_field
    dump_json = field is not None and default_class
    args: dict[str, Any] = {"background": None}
    if route.status_code:
        args["status_code"] = route.status_code
    options = {"include": route.response_model_include, "exclude": route.response_model_exclude,
               "by_alias": route.response_model_by_alias, "exclude_unset": route.response_model_exclude_unset,
               "exclude_defaults": route.response_model_exclude_defaults,
               "exclude_none": route.response_model_exclude_none}
    serialize_response: Callable[..., Awaitable[Any]] = routing.serialize_response  # checked by compat

    async def render(raw: Any) -> Response:
        if isinstance(raw, Response):
            return raw  # its background stays as set: FastAPI only fills in the (absent) background tasks
        content = await serialize_response(field=field, response_content=raw, is_coroutine=True,
                                            dump_json=dump_json, **options)
        response: Response = (Response(content=content, media_type="application/json", **args) if dump_json
                              else actual_class(content, **args))
        if not routing.is_body_allowed_for_status_code(response.status_code):  # type: ignore[attr-defined]
            response.body = b""
        return response

    return render


def compile_route(route: Any, original: Any) -> CompiledRoute:
    """``route``: the route FastAPI resolved (with the app's and router's dependencies); ``original``: what
    FastAPI put in ``scope["route"]``. Raises :class:`_Unsupported` for anything not mirrored exactly."""
    if fastpath_missing() is not None:
        raise _Unsupported("an internal of the installed FastAPI is missing")
    if getattr(route, "param_convertors", None) or getattr(route, "max_body_size", None) is not None:
        raise _Unsupported("path parameters or a route body limit")
    if getattr(route, "is_sse_stream", False) or getattr(route, "is_json_stream", False) \
            or getattr(route, "stream_item_field", None) is not None:
        raise _Unsupported("streaming route")
    dependant = route.dependant
    _check_plain(dependant, body=True)
    endpoint = route.endpoint
    if dependant.call is not endpoint or not inspect.iscoroutinefunction(endpoint):
        raise _Unsupported("endpoint is not async def")
    body_name, model = _body_model(route)
    steps: list[_Step] = []
    args = _flatten(dependant, steps, {})
    return CompiledRoute(route=original, steps=tuple(steps), endpoint=_Step(endpoint, tuple(args)),
                         body_name=body_name, model=model, overrides=route.dependency_overrides_provider,
                         render=_renderer(route))


def _resolved_route(scope: Scope) -> tuple[Any, Any] | None:
    """The route FastAPI resolved for this request and what it put in ``scope["route"]``."""
    original = scope.get("route")
    if original is None:
        return None
    # An included router's route runs as an effective route (with the app's and the router's dependencies).
    effective = (scope.get("fastapi") or {}).get("effective_route_context") or original
    if getattr(effective, "original_route", original) is not original:
        return None
    return effective, original


class FastRoutes:
    """The compiled-route table (see the module docstring). ``enabled`` False sends everything to FastAPI."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        # False when the installed FastAPI lacks an internal mirrored here (logged once by compat).
        self.supported = fastpath_missing() is None
        self.served = 0  # requests answered here, for tests
        self._table: dict[tuple[str, str], CompiledRoute | None] = {}
        self._routes: Sequence[Any] | None = None
        self._count = -1
        self._handlers: tuple[dict[int, Handler], dict[type[BaseException], Handler]] | None = None

    def lookup(self, scope: Scope) -> CompiledRoute | None:
        if not (self.enabled and self.supported):
            return None
        app = scope.get("app")
        # Only under the gateway's app with FastAPI's OpenTelemetry off (gateway.api.app.GatewayApp decides
        # once): with it on, FastAPI's routing records the route and the dependency spans, which this skips.
        if not isinstance(app, FastAPI) or getattr(app, "_telemetry_off", None) is not True:
            return None
        routes = app.router.routes
        if routes is not self._routes or len(routes) != self._count:
            self._table.clear()  # a route was added or removed: learn again
            self._routes, self._count = routes, len(routes)
            self._handlers = None
        compiled = self._table.get((scope["method"], scope["path"]))
        if compiled is None or compiled.overrides is not None and compiled.overrides.dependency_overrides:
            return None
        return compiled

    def learn(self, scope: Scope) -> None:
        """After FastAPI served a request: remember its route for this exact method and path."""
        if not (self.enabled and self.supported) or not isinstance(scope.get("app"), FastAPI):
            return
        key = (scope["method"], scope["path"])
        if key in self._table or len(self._table) >= 256:
            return
        resolved = _resolved_route(scope)
        if resolved is None:
            return
        route, original = resolved
        if getattr(route, "path_format", getattr(route, "path", None)) != scope["path"] \
                or scope["method"] not in (getattr(route, "methods", None) or ()):
            return  # a path template or a 405: nothing exact to remember
        try:
            self._table[key] = compile_route(route, original)
        except _Unsupported:
            self._table[key] = None
        except Exception:  # noqa: BLE001 - an unexpected shape is simply not compiled
            self._table[key] = None

    def _installed(self, app: FastAPI) -> tuple[dict[int, Handler], dict[type[BaseException], Handler]]:
        """The app's exception handlers as FastAPI installs them in Starlette's ExceptionMiddleware, by status
        and by class, with that middleware's own defaults (``Exception`` itself is the caller's: on FastAPI's
        path it reaches the gateway middleware too). Built from public names only."""
        if self._handlers is None:
            defaults = ExceptionMiddleware(_unreachable, debug=app.debug)
            by_status: dict[int, Handler] = {}
            by_class: dict[type[BaseException], Handler] = {
                HTTPException: defaults.http_exception, WebSocketException: defaults.websocket_exception}
            for key, value in app.exception_handlers.items():
                if key in (500, Exception):
                    continue
                if isinstance(key, int):
                    by_status[key] = value
                else:
                    by_class[key] = value
            self._handlers = by_status, by_class
        return self._handlers

    async def serve(self, compiled: CompiledRoute, scope: Scope, body: bytes, receive: Receive, send: Send,
                    fallback: Callable[[], Awaitable[None]]) -> None:
        """Answer the request through ``compiled``, or through ``fallback`` (FastAPI) when the body is not
        one it validates; errors are answered by the app's exception handlers, as on FastAPI's path."""
        try:
            value = compiled.model.model_validate_json(body)
        except pydantic.ValidationError:
            await fallback()  # FastAPI's own 400/422 (and its order: dependencies before the body check)
            return
        self.served += 1
        app = scope["app"]
        scope["endpoint"] = compiled.endpoint.call
        scope["path_params"] = {}
        scope["route"] = compiled.route
        scope.setdefault("router", app.router)
        started = False

        async def sender(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        request = Request(scope, receive, send)
        request._body = body  # read whole by the middleware; Request.body() answers from it
        try:
            await _run(compiled, request, value, sender)
        except Exception as exc:
            # What starlette._exception_handler.wrap_app_handling_exceptions does around FastAPI's route.
            by_status, by_class = self._installed(app)
            handler: Any = by_status.get(exc.status_code) if isinstance(exc, HTTPException) else None
            if handler is None:
                handler = next((by_class[cls] for cls in type(exc).__mro__ if cls in by_class), None)
            if handler is None:
                raise
            if started:
                raise RuntimeError("Caught handled exception, but response already started.") from exc
            if _is_async(handler):
                response = await handler(request, exc)
            else:
                response = await run_in_threadpool(handler, request, exc)
            if response is not None:
                await response(scope, receive, sender)
            exc.__traceback__ = None


async def _run(compiled: CompiledRoute, request: Request, value: pydantic.BaseModel, send: Send) -> None:
    """The dependencies, the endpoint and its response; what FastAPI's route handler does for these routes."""
    results: list[Any] = []
    for step in compiled.steps:
        results.append(await step.call(**{name: request if i == _REQUEST else results[i] for name, i in step.args}))
    kwargs = {name: request if i == _REQUEST else results[i] for name, i in compiled.endpoint.args}
    kwargs[compiled.body_name] = value
    response = await compiled.render(await compiled.endpoint.call(**kwargs))
    await response(request.scope, request.receive, send)


def _is_async(handler: Any) -> bool:
    """Whether calling ``handler`` returns an awaitable (Starlette asks the same of its handlers)."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    return inspect.iscoroutinefunction(handler) or (
        callable(handler) and inspect.iscoroutinefunction(getattr(handler, "__call__", None)))  # noqa: B004


async def _unreachable(scope: Scope, receive: Receive, send: Send) -> None:  # pragma: no cover
    raise AssertionError("only the handlers of this ExceptionMiddleware are used")
