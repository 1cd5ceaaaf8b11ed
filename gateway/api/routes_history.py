"""``GET /v1/history`` and ``GET /v1/answers/{request_id}``: a caller's own answers from the request audit,
and one answer by id (the console's history, re-open and permalinks). Who may see what: gateway.history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import AuditedAnswerOut, HistoryResponse
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.service import Gateway

router = APIRouter(prefix="/v1", tags=["history"])
COMMON = (errors.Unauthorized, errors.Forbidden, errors.InsufficientScope, errors.StoreNotConfigured,
          errors.StoreUnavailable)


@router.get("/history", response_model=HistoryResponse, summary="Your latest answers, newest first",
            description="Questions the caller (the end user, else the API key) asked, from the request audit: "
            "question, database, status, SQL and attempts, never rows. Only databases the caller may still use.",
            responses=openapi_responses(*COMMON))
async def get_history(limit: Annotated[int, Query(ge=1, le=200, description="At most this many.")] = 50,
                      gateway: Gateway = Depends(get_gateway),
                      principal: Principal = Depends(authorize)) -> HistoryResponse:
    found = await gateway.history(limit=limit, principal=principal)
    return HistoryResponse(answers=[AuditedAnswerOut(**a) for a in found])


@router.get("/answers/{request_id}", response_model=AuditedAnswerOut, summary="One audited answer (a permalink)",
            description="The answer under `request_id` for its owner, or for a dba or admin that may use its "
            "database (and carries no row-policy values); anyone else gets `unknown_request`, as for an id "
            "that was never audited.",
            responses=openapi_responses(errors.UnknownRequest, *COMMON))
async def get_answer(request_id: Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")],
                     gateway: Gateway = Depends(get_gateway),
                     principal: Principal = Depends(authorize)) -> AuditedAnswerOut:
    return AuditedAnswerOut(**await gateway.audited_answer(request_id, principal=principal))
