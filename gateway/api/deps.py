"""FastAPI dependencies: hand the running Gateway (and the resources its stages take) to routes.

They are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, a thread hop
per request that cost ``POST /v1/sql`` a fifth of its throughput (bench/throughput.py).
"""

from __future__ import annotations

from fastapi import Request

from gateway.service import Gateway
from gateway.state import GatewayState


async def get_state(request: Request) -> GatewayState:
    state: GatewayState = request.app.state.gateway
    return state


async def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.service
    return gateway
