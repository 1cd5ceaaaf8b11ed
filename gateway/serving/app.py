"""The gateway's FastAPI subclass: FastAPI's telemetry decided once per process, and the layers that would
only pass requests through left out of the middleware stack.

The ``__call__`` shortcut mirrors what ``FastAPI.__call__`` does with its native telemetry off; it is taken
only when the installed FastAPI's ``__call__`` has that switch (:func:`gateway.serving.compat.
telemetry_switch_missing`), else ``FastAPI.__call__`` runs unchanged. The layers are recognised by class name
and skipped only when they are exactly the pass-through shape; an unknown stack is served as built.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.serving.admission import GatewayMiddleware
from gateway.serving.compat import telemetry_switch_missing


class GatewayApp(FastAPI):
    """FastAPI, asking once per process whether its native OpenTelemetry instrumentation is on, and without
    the layers FastAPI wraps around the middleware that then only pass requests through.

    FastAPI asks on every request (it reads the global OpenTelemetry providers and environment variables:
    3% of the no-op route's samples). The gateway's own telemetry is its request log line and Prometheus
    metrics; an OpenTelemetry provider set up before the app starts is still honoured, one set up later only
    after a restart. With it off, FastAPI's exception-telemetry layer records nothing, and its body-limit
    layer has no limit to apply (``max_body_size`` unset: the gateway middleware bounds bodies), unless a
    parent app mounting this one set one."""

    _telemetry_off: bool | None = None
    _shortcut: bool | None = None  # telemetry off and FastAPI.__call__ of the shape mirrored below

    def _decide_telemetry(self) -> bool:
        if self._telemetry_off is None:
            telemetry = getattr(self, "_native_telemetry", None)  # absent before FastAPI 0.16x
            self._telemetry_off = telemetry is None or not telemetry.enabled()
        return self._telemetry_off

    def _decide_shortcut(self) -> bool:
        self._shortcut = self._decide_telemetry() and telemetry_switch_missing() is None
        return self._shortcut

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        if not self._decide_telemetry():
            return stack
        layer: Any = stack
        while not isinstance(layer, GatewayMiddleware) and hasattr(layer, "app"):
            inner = layer.app
            if type(inner).__name__ == "ExceptionTelemetryMiddleware" or (
                    type(inner).__name__ == "AppBodyLimitMiddleware" and getattr(self, "max_body_size", None) is None
                    and getattr(inner, "app", None) is not None and isinstance(inner.app, GatewayMiddleware)):
                layer.app = inner.app  # a pass-through layer: skip it
                continue
            layer = inner
        return stack

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (self._shortcut if self._shortcut is not None else self._decide_shortcut()):
            # What FastAPI.__call__ does when its telemetry is off.
            if self.root_path:
                scope["root_path"] = self.root_path
            await Starlette.__call__(self, scope, receive, send)
            return
        await super().__call__(scope, receive, send)

