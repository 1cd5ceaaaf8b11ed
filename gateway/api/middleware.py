"""Pure ASGI middleware (no BaseHTTPMiddleware: it costs a task per request): request id, the bound on
requests in flight (fast 503 ``overloaded``), the request's deadline, body size limit, request metrics and
one access log line per request."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway import deadline, errors
from gateway.api.problems import problem_response
from gateway.backpressure import InFlight
from gateway.observability import metrics
from gateway.observability.logging import get_logger

log = get_logger("gateway.access")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")  # a client's id is echoed in logs: keep it tame
# Probes and scrapes must answer even when the gateway sheds load: they are neither bounded nor timed.
UNBOUNDED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class _BodyTooLarge(Exception):
    pass


class GatewayMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int, max_in_flight: int = 1_000_000,
                 request_timeout_s: float | None = None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.in_flight = InFlight(max_in_flight)
        self.request_timeout_s = request_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope["headers"])
        incoming = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        status = 500
        response_started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        if scope["path"] in UNBOUNDED_PATHS:
            try:
                await self.app(scope, receive, send_wrapper)
            finally:
                _observe(scope, status, started)
            return
        if not self.in_flight.enter():
            # Shed before reading the body or touching any pool: an overloaded replica answers in microseconds.
            response = problem_response(self.in_flight.overloaded(), request_id)
            await response(scope, receive, send_wrapper)
            _observe(scope, status, started)
            return
        token = deadline.start(self.request_timeout_s) if self.request_timeout_s else None
        try:
            await self._bounded(scope, receive, send_wrapper, headers, request_id, lambda: response_started)
        finally:
            if token is not None:
                deadline.reset(token)
            self.in_flight.leave()
            _observe(scope, status, started)

    async def _bounded(self, scope: Scope, receive: Receive, send_wrapper: Send, headers: dict[bytes, bytes],
                       request_id: str, response_started: Callable[[], bool]) -> None:
        if scope["method"] in {"POST", "PUT", "PATCH"} and not _is_json(headers.get(b"content-type")):
            response = problem_response(errors.UnsupportedMediaType(
                "send the request body as JSON with Content-Type: application/json"), request_id)
            await response(scope, receive, send_wrapper)
            return
        declared = headers.get(b"content-length")
        limit = self.max_body_bytes
        too_large = problem_response(
            errors.PayloadTooLarge(f"request body exceeds {limit} bytes (server.max_body_bytes)"), request_id
        )
        try:
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise _BodyTooLarge
            received = 0
            tripped = False

            async def receive_limited() -> Message:
                nonlocal received, tripped
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > limit:
                        tripped = True
                        raise _BodyTooLarge
                return message

            async def send_limited(message: Message) -> None:
                # FastAPI turns any error while reading the body into its own 400; a body that tripped the
                # limit (sent without Content-Length) answers 413 instead of whatever the app made of it.
                if not tripped:
                    await send_wrapper(message)
                elif message["type"] == "http.response.start" and not response_started():
                    await too_large(scope, receive, send_wrapper)

            await self.app(scope, receive_limited, send_limited)
        except _BodyTooLarge:
            if response_started():
                raise
            await too_large(scope, receive, send_wrapper)


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
    metrics.REQUESTS.labels(endpoint, str(status)).inc()
    metrics.REQUEST_SECONDS.labels(endpoint).observe(elapsed)
    if endpoint not in {"/metrics", "/healthz", "/readyz"}:
        log.info("request", method=scope["method"], path=scope["path"], endpoint=endpoint,
                 status=status, duration_ms=round(elapsed * 1000, 3))
