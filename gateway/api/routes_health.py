"""Liveness, readiness and metrics for SREs."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse, Response

from gateway.api.deps import get_gateway, get_state
from gateway.observability import metrics
from gateway.service import Gateway
from gateway.state import GatewayState

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="Liveness: the process answers")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: every target database answers",
    description="200 when each pool runs `SELECT 1` within a second; 503 otherwise, with each failing database's "
    "reason in words (or when no database is configured). "
    "`privileges` lists, per database, what the gateway's roles may do beyond the rules (a hidden column they "
    "can read, writes, superuser, BYPASSRLS; checked at start-up and again at most once a minute); such a "
    "problem makes the answer 503 only for a database whose `privilege_check` is `fail`. With a store, "
    "`changes` shows whether this replica listens for the store's change notifications and the versions "
    "(keys, guidelines, examples) it serves: a replica whose versions trail the others' lags.",
    responses={503: {"description": "At least one database does not answer (or fails its privilege check), "
                                    "or none is configured."}},
)
async def readyz(gateway: Gateway = Depends(get_gateway)) -> Response:
    ready, report = await gateway.readiness()
    return JSONResponse(report, status_code=200 if ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def prometheus_metrics(state: GatewayState = Depends(get_state)) -> Response:
    metrics.observe_pools(state.targets.by_name.values())  # other workers refresh theirs every second
    body, content_type = metrics.exposition()
    return Response(body, media_type=content_type)
