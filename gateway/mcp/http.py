"""MCP over streamable HTTP at ``/mcp`` on the HTTP app: the same API keys, roles and database lists.

The HTTP middleware has already admitted the request (drain, media type, the API key, body size, an
in-flight slot) and counts and logs it like any other; this endpoint then checks that the key may use MCP
at all (role ``client``) and spends a token of its rate limit, exactly as a ``/v1`` route would, and hands
the request to the SDK's session manager with the principal in the request's state, where every tool call
of that request finds it (:func:`caller_of`).

The SDK is imported, and its session manager started, on the first MCP request: importing it costs about as
much as the rest of the app, and a gateway nobody reaches over MCP should not start slower for it.

With ``[auth.oidc]`` an end user's OAuth access token works here as an API key does (remote MCP connectors
attach a server only through OAuth 2.1): a request without a valid token answers 401 with a
``WWW-Authenticate`` challenge naming the protected-resource metadata (gateway.auth.resource), and a tool
call or resource read the token has no scope for answers 403 ``insufficient_scope`` naming the scope, before
the SDK runs it (:func:`_check_scopes`; tools/list still shows every tool the role allows).

Stateless: every POST is served by a fresh transport, so replicas behind a load balancer need no sticky
sessions and nothing of one request (or one key) survives into the next. Progress notifications of a
tool call travel on that call's own SSE response. ``GET /mcp`` (a stream for server-initiated messages,
which this server never sends) answers 405, so no idle stream holds an in-flight slot. A tool call runs
under its HTTP request's deadline (:attr:`gateway.mcp.server.Caller.deadline`), which the SDK's own task
would not otherwise see.

Without access control (on loopback only, see :func:`gateway.auth.check_exposure`) the endpoint also checks
``Host`` and ``Origin`` against loopback names (as the gateway's middleware does for every route then): a web
page that rebinds its own host name to 127.0.0.1 can reach the port, but not past that check.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from gateway import errors
from gateway.api.middleware import replay
from gateway.api.problems import challenge_of, problem_response
from gateway.auth import ANONYMOUS, Principal, Role
from gateway.auth.scopes import Operation
from gateway.service import Gateway
from gateway.settings import Settings

if TYPE_CHECKING:
    from mcp.server import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from gateway.mcp.server import Caller

PATH = "/mcp"
METHODS = ["GET", "POST", "DELETE"]  # GET answers 405 itself, with the problem body the gateway sends
ALLOW = "POST, DELETE"
LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


async def caller_of(ctx: ServerRequestContext[Any, Any] | None) -> Caller:
    """The caller of an MCP request over HTTP: what :class:`McpEndpoint` left in its request's state."""
    from gateway.mcp.server import Caller

    request = ctx.request if ctx is not None else None
    principal = getattr(getattr(request, "state", None), "principal", None)
    if not isinstance(principal, Principal):  # fail closed: never serve a request nobody authenticated
        raise errors.Unauthorized("the MCP request carries no authenticated caller")
    gateway: Gateway = request.app.state.service  # type: ignore[union-attr]
    state = request.state  # type: ignore[union-attr]
    return Caller(gateway, principal, state.request_id, getattr(state, "deadline", None))


class McpEndpoint:
    """The ASGI endpoint mounted at ``/mcp``; :meth:`run` must be open while the app serves (its lifespan)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.route = Route(PATH, endpoint=self, methods=METHODS, include_in_schema=False)
        self.manager: StreamableHTTPSessionManager | None = None
        self._serving = False
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve MCP while the block runs (the app's lifespan); stop the session manager if one started."""
        self._serving = True
        self._lock, self._stop = asyncio.Lock(), asyncio.Event()  # of the loop that serves
        try:
            yield
        finally:
            self._serving = False
            self.manager = None
            task, self._task = self._task, None
            if task is not None:
                self._stop.set()
                await task

    async def _started(self) -> StreamableHTTPSessionManager:
        """The session manager, started on first use. Its task group lives in a task of its own (with a
        context of its own): a task group must be left by the task that entered it, and neither a request
        nor the lifespan (a test fixture may leave it from another task) is that task."""
        async with self._lock:
            if self.manager is not None:
                return self.manager
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
            from mcp.server.transport_security import TransportSecuritySettings

            from gateway.mcp.server import build_server

            loopback = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=LOOPBACK_HOSTS,
                                                 allowed_origins=LOOPBACK_ORIGINS)
            # A session manager runs once: each start of the app gets its own.
            manager = StreamableHTTPSessionManager(
                app=build_server(caller_of), stateless=True, json_response=False,
                security_settings=None if self.settings.auth.enabled else loopback,
                max_request_body_size=self.settings.server.max_body_bytes)
            started, stop = asyncio.Event(), self._stop

            async def serve() -> None:
                async with manager.run():
                    started.set()
                    await stop.wait()

            task = asyncio.create_task(serve(), name="mcp-session-manager", context=contextvars.Context())
            waiter = asyncio.create_task(started.wait())
            await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if task.done():
                task.result()  # it failed to start: raise why
            self._task, self.manager = task, manager
            return manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # FastAPI records only its own routes in the scope; the request metrics and log line read it.
        scope["route"] = self.route
        state = scope.setdefault("state", {})
        if scope["method"] == "GET":
            # GET opens a stream for server-initiated messages, which this server never sends (stateless, no
            # sessions): the spec lets a server answer 405 instead. An idle stream would hold an in-flight
            # slot for as long as its client keeps the socket open.
            refused = errors.MethodNotAllowed("GET /mcp opens no stream here: this server sends no messages of "
                                              "its own; POST requests, their answers stream on the POST",
                                              allow=ALLOW)
            refused.headers = {"Allow": ALLOW}  # type: ignore[misc]
            await problem_response(refused, state.get("request_id"))(scope, receive, send)
            return
        app = scope["app"]
        try:
            principal = state["principal"] = await self._authorize(app, scope, state)
            if principal.scopes is not None and scope["method"] == "POST":
                body, receive = await _body(receive)
                _check_scopes(app.state.service, principal, body)
        except errors.GatewayError as exc:
            challenge = challenge_of(scope) if "WWW-Authenticate" in exc.headers else None
            await problem_response(exc, state.get("request_id"), challenge=challenge)(scope, receive, send)
            return
        if not self._serving:
            await problem_response(errors.ShuttingDown("MCP is not serving"), state.get("request_id"))(
                scope, receive, send)
            return
        manager = await self._started()
        await manager.handle_request(scope, receive, _plain_status(send))

    async def _authorize(self, app: Any, scope: Scope, state: dict[str, Any]) -> Principal:
        gateway_state = app.state.gateway
        auth = gateway_state.auth
        if auth is None:  # an open Gateway always sets it; failing closed beats serving unauthenticated
            raise errors.GatewayError("access control is not initialised")
        principal = state.get("principal")
        if not auth.settings.enabled:
            principal = ANONYMOUS
        elif not isinstance(principal, Principal):  # the middleware authenticates; a request that got here
            headers = dict(scope["headers"])       # some other way is authenticated here
            principal = await auth.authenticate(headers.get(b"authorization", b"").decode("latin-1") or None)
        principal.check_role(Role.CLIENT)
        limits = gateway_state.rate_limits
        if limits is not None and limits.enabled:
            client = scope.get("client")
            await limits.admit(principal, client[0] if client else "unknown")
        return principal


async def _body(receive: Receive) -> tuple[bytes, Receive]:
    """The request's body (the middleware has read it whole, within server.max_body_bytes) and a receive
    that hands it on again to the SDK."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"", receive  # the client went away: the SDK sees that as it would have
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    return body, replay(body, receive)


def _check_scopes(gateway: Gateway, principal: Principal, body: bytes) -> None:
    """Refuse a tool call or resource read the token has no scope for before the SDK runs it: over HTTP the
    answer is then 403 ``insufficient_scope`` with a ``WWW-Authenticate`` challenge naming the scope, from which
    an MCP client can ask its user for it (step-up authorization, as the MCP spec's authorization section
    says). The Gateway's operations check the same again (the decision is the Gateway's: this only asks it
    earlier). A body that is not JSON-RPC is left to the SDK to refuse."""
    from gateway.mcp.tools import BY_NAME

    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
            continue
        method, params = message.get("method"), message["params"]
        if method == "tools/call":
            spec = BY_NAME.get(params.get("name")) if isinstance(params.get("name"), str) else None
            if spec is not None:
                gateway.check_scope(principal, spec.operation)
        elif method == "resources/read":
            gateway.check_scope(principal, Operation.SCHEMA)  # every resource shows a database's schema


def _plain_status(send: Send) -> Send:
    """The SDK answers some requests with an ``HTTPStatus`` member: metrics label statuses as plain numbers."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["status"] = int(message["status"])
        await send(message)

    return sending
