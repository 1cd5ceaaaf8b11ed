"""Pure ASGI middleware (no BaseHTTPMiddleware: it costs a task per request): request id (always generated;
a client's ``X-Request-Id`` is only a correlation id), admission, the request's deadline, request metrics and
one access log line per request.

Admission runs in this order, each step refusing with a problem before the next costs anything:

1. draining after SIGTERM: 503 ``shutting_down`` (the connection is closed after the answer);
2. the media type: 415;
3. the API key, checked before the request holds anything; an address that keeps sending bad keys spends a
   small budget (:class:`gateway.serving.backpressure.Strangers`) and then answers 429 without a key lookup (the
   console's static files under ``/console`` need no key: the page must load before anyone can sign in);
4. the body, read whole within ``server.body_timeout_s`` (408 ``request_timeout``) and
   ``server.max_body_bytes`` (413);
5. only then a slot among ``backpressure.max_in_flight`` (503 ``overloaded``), so a client that sends its
   body one byte at a time, or no valid key, never holds a slot an authenticated client needs; and one of
   its key's (its end user's, or its address's without a key) ``backpressure.max_in_flight_per_key`` slots
   (429 ``too_many_in_flight``), so one client cannot take every slot.

An admitted request runs under a hard timeout: ``server.request_timeout_s`` starts its deadline
(:mod:`gateway.serving.deadline`), which every stage reads; :data:`gateway.serving.deadline.HARD_GRACE_S` after
it, whatever still runs is cancelled and the request answers 504 ``deadline_exceeded`` (a server-sent-event stream that
already started gets a last ``problem`` event instead). Work after the response is complete (background
tasks, each with bounds of its own) is not cut short.

The request line and headers are bounded before the app is called at all (:mod:`gateway.serving.server`).
An admitted request to a compiled route (:mod:`gateway.serving.fastpath`: ``POST /v1/sql`` and the like) is
served without FastAPI's routing and dependency machinery, with the same answers.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import structlog
from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway import errors
from gateway.api.console import is_console
from gateway.api.problems import challenge_of, problem_response
from gateway.auth.authenticator import is_loopback
from gateway.auth.resource import METADATA_PATHS
from gateway.observability import latency, metrics
from gateway.observability.logging import get_logger, log_request
from gateway.serving import deadline, timeouts
from gateway.serving.backpressure import InFlight, KeyInFlight, Strangers
from gateway.serving.fastpath import CompiledRoute, FastRoutes

if TYPE_CHECKING:
    from gateway.auth import Authenticator

log = get_logger("gateway.access")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")  # a client's id is echoed in logs: keep it tame
# Probes and scrapes must answer even when the gateway sheds load: they are neither bounded nor timed.
UNBOUNDED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# Bounded like any request, but served without a key (gateway.auth.access.PUBLIC_ROUTES lists them too).
UNAUTHENTICATED_PATHS = frozenset(METADATA_PATHS)
_JSON = b"application/json"
# Set by the server (gateway.serving.server) once a request's body is all in: reading it cannot wait on the client.
BODY_READ = "gateway.body_read"  # the one body type compiled routes take; anything else goes through FastAPI
# Set by the server: ``watch(callback) -> unwatch``, calling ``callback`` once when the request's client goes
# away (when uvicorn's receive() would answer ``http.disconnect``), without a task waiting on receive()
# (gateway.api.disconnect).
CLIENT_GONE = "gateway.client_gone"


def new_request_id() -> str:
    """32 hex digits from the OS's random source, as uuid4().hex had (ids are echoed to clients and name
    audited answers: they must not be predictable). Read 4 KiB at a time: one getrandom(2) per 256 requests
    instead of one each (py-spy: 4% of the no-op route in that system call)."""
    global _random, _taken
    if _taken >= len(_random):
        _random, _taken = os.urandom(4096), 0
    start = _taken
    _taken += 16
    return _random[start:_taken].hex()


def _forget_random() -> None:
    global _random, _taken
    _random, _taken = b"", 0


_random = b""
_taken = 0
os.register_at_fork(after_in_child=_forget_random)  # a forked child must not hand out its parent's ids


class Drain:
    """Set once when the server starts shutting down (:mod:`gateway.serving.server` sets it on SIGTERM)."""

    def __init__(self) -> None:
        self.started = False

    def start(self) -> None:
        self.started = True


class _Refused(Exception):
    def __init__(self, error: errors.GatewayError) -> None:
        self.error = error


class GatewayMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int, max_in_flight: int = 1_000_000,
                 request_timeout_s: float | None = None, body_timeout_s: float = 30.0,
                 drain: Drain | None = None, authenticator: Callable[[], Authenticator | None] | None = None,
                 strangers: Strangers | None = None, fast: FastRoutes | None = None,
                 max_in_flight_per_key: int = 0) -> None:
        self.app = app
        self.fast = fast or FastRoutes()  # compiled routes (gateway.serving.fastpath)
        self.max_body_bytes = max_body_bytes
        self.in_flight = InFlight(max_in_flight)
        self.per_key = KeyInFlight(max_in_flight_per_key)
        self.request_timeout_s = request_timeout_s
        self.body_timeout_s = body_timeout_s
        self.drain = drain or Drain()
        # Looked up per request: the app's lifespan creates the authenticator after the middleware exists.
        self.authenticator = authenticator or (lambda: None)
        self.strangers = strangers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope["headers"])
        # The id an answer is audited under and feedback names is always ours: a client that could pick it
        # could have its answer audited under, or reviewed as, another principal's request. The client's own
        # X-Request-Id (trace propagation) is kept as a correlation id: logged and echoed, never audited.
        request_id = new_request_id()
        incoming = headers.get(b"x-request-id", b"").decode("latin-1")
        correlation_id = incoming if _SAFE_ID.match(incoming) else None
        scope.setdefault("state", {})["request_id"] = request_id
        structlog.contextvars.clear_contextvars()
        if correlation_id is None:
            structlog.contextvars.bind_contextvars(request_id=request_id)
        else:
            structlog.contextvars.bind_contextvars(request_id=request_id, correlation_id=correlation_id)
        status = 500
        close = False  # ask the server to close the connection after this answer
        started_response = False
        event_stream = False
        hard: timeouts.Timeout | None = None  # the hard timeout, once the request is admitted

        async def send_wrapper(message: Message) -> None:
            nonlocal status, started_response, event_stream
            if (message["type"] == "http.response.body" and not message.get("more_body", False)
                    and hard is not None and not hard.expired()):
                hard.reschedule(None)  # the answer is out: background work has bounds of its own
            if message["type"] == "http.response.start":
                status = message["status"]
                started_response = True
                event_stream = any(k.lower() == b"content-type" and v.startswith(b"text/event-stream")
                                   for k, v in message.get("headers", []))
                extra = [(b"x-request-id", request_id.encode())]
                if correlation_id is not None:
                    extra.append((b"x-correlation-id", correlation_id.encode()))
                if close or self.drain.started:
                    # During the drain every answer is the connection's last; uvicorn closes it after sending.
                    extra.append((b"connection", b"close"))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        async def call_app(app_receive: Receive, compiled: CompiledRoute | None = None, body: bytes = b"") -> None:
            try:
                if compiled is None:
                    await self.app(scope, app_receive, send_wrapper)
                else:
                    await self.fast.serve(compiled, scope, body, receive, send_wrapper,
                                          fallback=lambda: self.app(scope, app_receive, send_wrapper))
            except Exception as exc:
                # A bug. Answered here, not by Starlette's outermost handler: that one re-raises after its
                # 500, and uvicorn then closes the connection under a client that may already be sending
                # its next request on it (a dropped connection on top of the 500).
                if started_response:
                    raise  # half an answer went out: only closing the connection can tell the client
                log.error("unhandled_error", error=repr(exc), exc_info=exc)
                error = errors.GatewayError("an unexpected error occurred; it has been logged")
                await problem_response(error, request_id)(scope, receive, send_wrapper)

        if scope["path"] in UNBOUNDED_PATHS:
            try:
                self._loopback_only(headers)
                await call_app(receive)
            except _Refused as refused:
                close = True
                await problem_response(refused.error, request_id)(scope, receive, send_wrapper)
            finally:
                _observe(scope, status, started)
            return
        try:
            body = await self._admit(scope, receive, headers)
        except _Refused as refused:
            # Refused before the body was read (or with part of it unread): this connection is done.
            close = True
            error = refused.error
            challenge = challenge_of(scope) if "WWW-Authenticate" in error.headers else None
            await problem_response(error, request_id, challenge=challenge)(scope, receive, send_wrapper)
            _observe(scope, status, started)
            return
        except _Disconnected:
            _observe(scope, 499, started)
            return
        if not self.in_flight.enter():
            await problem_response(self.in_flight.overloaded(), request_id)(scope, receive, send_wrapper)
            _observe(scope, status, started)
            return
        owner = self.per_key.key_of(scope)
        if not self.per_key.enter(owner):
            self.in_flight.leave()
            await problem_response(self.per_key.refused(owner), request_id)(scope, receive, send_wrapper)
            _observe(scope, status, started)
            return
        token = deadline.start(self.request_timeout_s) if self.request_timeout_s else None
        at = deadline.at() if token is not None else None
        scope["state"]["deadline"] = at  # for work that runs outside this context (MCP tool calls)
        try:
            async with timeouts.timeout_at(None if at is None else at + deadline.HARD_GRACE_S) as hard:
                compiled = self.fast.lookup(scope) if headers.get(b"content-type") == _JSON else None
                if compiled is not None and len(headers) == len(scope["headers"]):  # no repeated header
                    await call_app(replay(body, receive), compiled, body)
                else:
                    await call_app(replay(body, receive))
                    self.fast.learn(scope)
        except TimeoutError:
            if hard is None or not hard.expired():
                raise
            await self._too_late(scope, receive, send_wrapper, request_id, started_response, event_stream)
        finally:
            if token is not None:
                deadline.reset(token)
            self.per_key.leave(owner)
            self.in_flight.leave()
            _observe(scope, status, started)

    async def _too_late(self, scope: Scope, receive: Receive, send: Send, request_id: str,
                        started_response: bool, event_stream: bool) -> None:
        """The answer when the hard timeout cancelled the handler: a 504 problem, or a last ``problem``
        event on a stream that started; any other started answer can only be cut (the connection closes)."""
        metrics.REJECTED.labels("deadline").inc()
        log.warning("request_deadline_exceeded", path=scope["path"], timeout_s=self.request_timeout_s)
        error = deadline.exceeded("the request")
        if not started_response:
            await problem_response(error, request_id)(scope, receive, send)
            return
        if not event_stream:
            raise RuntimeError("the request's deadline passed in the middle of its answer")
        # The problem body is one line of JSON: one data line, as the stream's own problem events.
        event = b"event: problem\ndata: " + bytes(problem_response(error, request_id).body) + b"\n\n"
        await send({"type": "http.response.body", "body": event, "more_body": False})

    async def _admit(self, scope: Scope, receive: Receive, headers: dict[bytes, bytes]) -> bytes:
        """Steps 1-4 of the module docstring; the request's whole body, or :class:`_Refused`."""
        if self.drain.started:
            raise _Refused(errors.ShuttingDown("this replica is shutting down; retry on another one"))
        if scope["method"] in {"POST", "PUT", "PATCH"} and not _is_json(headers.get(b"content-type")):
            raise _Refused(errors.UnsupportedMediaType(
                "send the request body as JSON with Content-Type: application/json"))
        # The console's static page must load before it can sign in; the OAuth metadata is how a client
        # learns where to get a token at all.
        if not is_console(scope["path"]) and scope["path"] not in UNAUTHENTICATED_PATHS:
            await self._authenticate(scope, headers)
        else:
            self._loopback_only(headers)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _Refused(self._too_large())
        if scope.get(BODY_READ):  # no timer to arm and cancel: the body came with the headers
            return await self._read_body(receive)
        try:
            async with timeouts.timeout(self.body_timeout_s):
                return await self._read_body(receive)
        except TimeoutError:
            raise _Refused(errors.RequestTimeout(
                f"the request body did not arrive within {self.body_timeout_s:g} s (server.body_timeout_s)")) from None

    def _loopback_only(self, headers: dict[bytes, bytes]) -> None:
        """Without API keys, refuse a request naming another host (DNS rebinding), also where no key is asked
        for: probes, metrics and the console would otherwise serve a rebinding page."""
        authenticator = self.authenticator()
        if authenticator is not None and not authenticator.settings.enabled:
            _addressed_to_loopback(headers)

    async def _authenticate(self, scope: Scope, headers: dict[bytes, bytes]) -> None:
        authenticator = self.authenticator()
        if authenticator is not None and not authenticator.settings.enabled:
            _addressed_to_loopback(headers)  # anonymous is admin: only for this machine's own clients
            # What authorize would ask the authenticator for (anonymous); left for it as with keys, which saves
            # it a failed attribute lookup and the call on every request.
            scope["state"]["principal"] = await authenticator.authenticate(None)
            return
        if authenticator is None:
            return  # the app's own dependency decides (fails closed when unset)
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        client = scope.get("client")
        address = client[0] if client else "unknown"
        strangers = self.strangers
        try:
            if strangers is not None and not authenticator.known(authorization):
                strangers.check(address)
            principal = await authenticator.authenticate(authorization)
        except errors.Unauthorized as exc:
            if strangers is not None:
                strangers.refused(address)
            raise _Refused(exc) from None
        except errors.GatewayError as exc:
            raise _Refused(exc) from None
        scope["state"]["principal"] = principal  # gateway.auth.access.authorize reuses it
        # The key and the end user's stable id (a token's subject; its e-mail only with auth.oidc.log_email,
        # which puts it in the principal's name) name the caller in logs.
        structlog.contextvars.bind_contextvars(
            api_key=principal.key_id, user=principal.name if principal.user is not None else None,
            client=principal.client)

    async def _read_body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > self.max_body_bytes:  # sent without (or with a false) Content-Length
                raise _Refused(self._too_large())
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self) -> errors.PayloadTooLarge:
        return errors.PayloadTooLarge(f"request body exceeds {self.max_body_bytes} bytes (server.max_body_bytes)")


class _Disconnected(Exception):
    """The client went away while sending its body: nobody is left to answer."""


def replay(body: bytes, receive: Receive) -> Receive:
    """The body read during admission, then the server's own messages (``http.disconnect`` for routes that
    watch for a client going away)."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _is_json(content_type: bytes | None) -> bool:
    # A body-less POST has no content type; anything sent must be JSON (application/json or +json).
    if content_type is None:
        return True
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or media.endswith(b"+json")


def _observe(scope: Scope, status: int, started: float) -> None:
    route = scope.get("route")
    endpoint = getattr(route, "path", None) or "unmatched"
    elapsed = time.perf_counter() - started
    key = (endpoint, status)
    children = _children.get(key)
    if children is None:  # labels() validates and locks on every call; a route's children never change
        children = (metrics.REQUESTS.labels(endpoint, str(status)), metrics.REQUEST_SECONDS.labels(endpoint))
        if len(_children) < 4096:  # route templates times statuses: bounded unless something is wrong
            _children[key] = children
    children[0].inc()
    children[1].observe(elapsed)
    if endpoint.startswith(("/v1", "/mcp")):  # the Status page's sparklines (gateway.observability.latency)
        latency.HISTORY.observe(elapsed)
    if endpoint not in UNBOUNDED_PATHS:
        log_request({"method": scope["method"], "path": _logged_path(scope["path"]), "endpoint": endpoint,
                     "status": status, "duration_ms": round(elapsed * 1000, 3)})


_children: dict[tuple[str, int], tuple[Counter, Histogram]] = {}

# The request line keeps this much of the client's path. Each line is one write() (observability.logging),
# which a pipe keeps whole only up to PIPE_BUF (4 KiB on Linux); a client's 60 KiB path, up to six bytes a
# character once escaped, would otherwise let another worker's line land inside this one.
MAX_LOGGED_PATH = 256


def _logged_path(path: str) -> str:
    return path if len(path) <= MAX_LOGGED_PATH else path[:MAX_LOGGED_PATH] + "..."


def _addressed_to_loopback(headers: dict[bytes, bytes]) -> None:
    """Without API keys every caller is admin, which check_exposure keeps to loopback listeners. A web page
    can still reach a loopback port by rebinding its own host name to 127.0.0.1, and is then same-origin with
    the gateway; its requests name that host (and its origin), never a loopback one. Refuse them."""
    names = (headers.get(b"host", b""), headers.get(b"origin"))
    if names in _verdicts:
        refusal = _verdicts[names]
    else:  # the verdict depends on these two values only: parse each distinct pair once
        refusal = _loopback_refusal(*names)
        if len(_verdicts) < 1024:
            _verdicts[names] = refusal
    if refusal is not None:
        host, origin = refusal
        raise _Refused(errors.Forbidden(
            f"without API keys the gateway answers only requests addressed to a loopback name (localhost, "
            f"127.0.0.1, [::1]); this one names host {host!r}" + (f" from origin {origin!r}" if origin else "")
            + ". Turn on auth.enabled with API keys to serve other names.", host=host, origin=origin or None))


_verdicts: dict[tuple[bytes, bytes | None], tuple[str, str] | None] = {}


def _loopback_refusal(host_header: bytes, origin_header: bytes | None) -> tuple[str, str] | None:
    """None when the request names a loopback host (and origin, when sent); else the host and origin."""
    host = host_header.decode("latin-1")
    origin = (origin_header or b"").decode("latin-1")
    name = urlsplit(f"//{host}").hostname or ""
    origin_name = urlsplit(origin).hostname if origin and origin != "null" else None
    if not is_loopback(name) or (origin and (origin_name is None or not is_loopback(origin_name))):
        return host, origin
    return None
