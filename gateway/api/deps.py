"""FastAPI dependencies: hand the running Gateway to routes (they call its methods, nothing below it).

They are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, a thread hop
per request that cost ``POST /v1/sql`` a fifth of its throughput (bench/throughput.py).
"""

from __future__ import annotations

from fastapi import Request

from gateway.service import Gateway


async def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.service
    return gateway
