"""FastAPI dependencies: hand the running gateway's state to routes."""

from __future__ import annotations

from fastapi import Request

from gateway.state import GatewayState


def get_state(request: Request) -> GatewayState:
    state: GatewayState = request.app.state.gateway
    return state
