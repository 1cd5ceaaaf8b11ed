"""FastAPI dependencies: hand the running Gateway (and the resources its stages take) to routes."""

from __future__ import annotations

from fastapi import Request

from gateway.service import Gateway
from gateway.state import GatewayState


def get_state(request: Request) -> GatewayState:
    state: GatewayState = request.app.state.gateway
    return state


def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.service
    return gateway
