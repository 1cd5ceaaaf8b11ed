"""Guideline lifecycle for DBAs: list and read versions, regenerate, activate (through the gate)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from gateway import errors
from gateway.api.deps import get_state
from gateway.api.models import (
    ActivateRequest,
    GuidelineDetail,
    GuidelineList,
    GuidelineSummary,
    RegenerateRequest,
    RegenerateResponse,
)
from gateway.api.problems import openapi_responses
from gateway.auth.access import authorize
from gateway.feedback import store_of
from gateway.magic import lifecycle
from gateway.state import GatewayState
from gateway.store import guidelines
from gateway.store.pool import store_faults

# Every route needs a DBA key (see gateway.auth.access.ROUTE_ROLES).
router = APIRouter(prefix="/v1/guidelines", tags=["guidelines"], dependencies=[Depends(authorize)])

# Versions are Postgres integers: anything outside their range is a 422, never a database error.
Version = Annotated[int, Path(ge=1, le=2**31 - 1, description="A guideline version number.")]

STORE = (errors.StoreNotConfigured, errors.StoreUnavailable, errors.Unauthorized, errors.Forbidden)


@router.get("", response_model=GuidelineList, summary="List guideline versions",
            responses=openapi_responses(*STORE))
async def list_guidelines(state: GatewayState = Depends(get_state)) -> GuidelineList:
    with store_faults("the versions could not be read"):
        versions = await guidelines.list_all(store_of(state.store).pool)
    active = next((v.version for v in versions if v.status == "active"), None)
    return GuidelineList(active=active, versions=[GuidelineSummary(**v.summary()) for v in versions])


@router.get("/{version}", response_model=GuidelineDetail, summary="One version: text, provenance, evaluation",
            responses=openapi_responses(errors.UnknownGuidelineVersion, *STORE))
async def get_guideline(version: Version, state: GatewayState = Depends(get_state)) -> GuidelineDetail:
    with store_faults("the version could not be read"):
        return GuidelineDetail(**(await lifecycle.get(store_of(state.store), version)).as_dict())


@router.post(
    "/regenerate", response_model=RegenerateResponse, summary="Run MAGIC on the pending corrections now",
    description="Runs one regeneration and answers when it is done. Only one replica regenerates at a time; "
    "the others answer `regeneration_running`. A candidate whose provenance includes corrections no dba or "
    "admin reviewed (`unreviewed_corrections`) is never activated by a run: the outcome is `pending_review` "
    "and a DBA activates it with `POST /v1/guidelines/{version}/activate`.",
    responses=openapi_responses(errors.RegenerationRunning, errors.LLMNotConfigured, errors.LLMUnavailable,
                                errors.LLMBadOutput, *STORE),
)
async def regenerate(body: RegenerateRequest | None = None,
                     state: GatewayState = Depends(get_state)) -> RegenerateResponse:
    with store_faults("the regeneration did not finish; run it again"):
        report = await lifecycle.run_regeneration(state, store_of(state.store),
                                                  activate=body.activate if body else None)
    return RegenerateResponse(**report.as_dict())


@router.post(
    "/{version}/activate", response_model=GuidelineDetail, summary="Activate a version",
    description="A candidate is replayed on held-out corrections first and activated only when it is not "
    "worse than the version in force (`force` skips that). A version that was active before (a rollback) is "
    "activated at once.",
    responses=openapi_responses(errors.UnknownGuidelineVersion, errors.GuidelineGateFailed,
                                errors.LLMNotConfigured, errors.LLMUnavailable, *STORE),
)
async def activate(version: Version, body: ActivateRequest | None = None,
                   state: GatewayState = Depends(get_state)) -> GuidelineDetail:
    with store_faults("the version was not activated"):
        activated = await lifecycle.activate(state, store_of(state.store), version, force=body.force if body else False)
    return GuidelineDetail(**activated.as_dict())
