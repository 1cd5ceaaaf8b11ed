"""``POST /v1/feedback``: a client says whether an answer was right, optionally with the right SQL."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Header
from starlette.responses import Response

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import FeedbackRequest, FeedbackResponse
from gateway.api.problems import openapi_responses
from gateway.auth import Principal, Role
from gateway.auth.access import authorize
from gateway.feedback import FeedbackIn, client_id, feedback_dict
from gateway.service import Gateway

router = APIRouter(prefix="/v1", tags=["feedback"])


@router.post(
    "/feedback",
    response_model=FeedbackResponse,
    status_code=201,
    summary="Tell the gateway whether an answer was right",
    description="Idempotent per request and client (the API key; `X-Client-Id` when auth is off): the same "
    "feedback again answers 200 with the stored row, different feedback `feedback_conflict`. `correct` proposes "
    "the question and its SQL as an example; `incorrect` with `corrected_sql` stores a correction and proposes "
    "the pair once that SQL passed the safety check and ran. A proposed example is used for other questions "
    "only after a dba or admin approves it (`/v1/examples`); feedback sent with a dba or admin key is approved "
    "at once. A 2xx means the feedback is committed.",
    responses={200: {"description": "This feedback had been recorded before.", "model": FeedbackResponse},
               **openapi_responses(errors.Unauthorized, errors.Forbidden, errors.InsufficientScope,
                                   errors.MalformedBody, errors.InvalidRequest, errors.UnknownRequest,
                                   errors.FeedbackConflict, errors.CorrectionBlocked, errors.SqlTooLarge,
                                   errors.QueryError, errors.StatementTimeout, errors.DatabaseUnavailable,
                                   errors.StoreNotConfigured, errors.StoreUnavailable)},
)
async def post_feedback(
    body: FeedbackRequest,
    x_client_id: Annotated[str | None, Header(
        description="Who gives the feedback when auth is off; with auth, the API key decides.")] = None,
    gateway: Gateway = Depends(get_gateway),
    principal: Principal = Depends(authorize),
) -> Response:
    item = FeedbackIn(request_id=body.request_id, client_id=client_id(x_client_id, principal.key_id),
                      verdict=body.verdict, corrected_sql=body.corrected_sql, note=body.note,
                      may_use=principal.check_database, pg_role=principal.pg_role,
                      reviewer=principal.key_id is not None and principal.role.allows(Role.DBA))
    stored, created = await gateway.feedback(item, principal=principal)  # its scope is checked there
    return Response(json.dumps({**feedback_dict(stored), "created": created}), media_type="application/json",
                    status_code=201 if created else 200)
