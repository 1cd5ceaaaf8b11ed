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
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.learning.feedback import feedback_dict
from gateway.service import Gateway

router = APIRouter(prefix="/v1", tags=["feedback"])


@router.post(
    "/feedback",
    response_model=FeedbackResponse,
    status_code=201,
    summary="Tell the gateway whether an answer was right",
    description="Only the owner of the answer may send feedback on it: the end user who asked, else the API "
    "key that asked (`X-Client-Id` when auth is off). Anyone else's feedback answers `unknown_request`, as an "
    "id that was never audited does. Idempotent per request and owner: the same "
    "feedback again answers 200 with the stored row, different feedback `feedback_conflict`. `correct` proposes "
    "the question and its SQL as an example; `incorrect` with `corrected_sql` stores a correction and proposes "
    "the pair once that SQL passed the safety check and ran. A proposed example is used for other questions "
    "only after a dba or admin approves it (`/v1/examples`); feedback from an authenticated dba or admin is approved "
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
        description="Who gives the feedback when auth is off; with auth, the end user (else the API key) "
        "does.")] = None,
    gateway: Gateway = Depends(get_gateway),
    principal: Principal = Depends(authorize),
) -> Response:
    stored, created = await gateway.feedback(body.request_id, body.verdict, corrected_sql=body.corrected_sql,
                                             note=body.note, principal=principal, client=x_client_id)
    return Response(json.dumps({**feedback_dict(stored), "created": created}), media_type="application/json",
                    status_code=201 if created else 200)
