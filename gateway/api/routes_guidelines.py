"""Guideline lifecycle for DBAs: list and read versions, regenerate, activate (through the gate), roll back,
reset to the shipped default, per database or global."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import (
    ActivateRequest,
    GuidelineDetail,
    GuidelineEventOut,
    GuidelineEvents,
    GuidelineInForce,
    GuidelineList,
    GuidelineSummary,
    RegenerateRequest,
    RegenerateResponse,
    RegressionReportOut,
    RegressionReports,
    ResetRequest,
    RollbackRequest,
    ShippedGuideline,
)
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.service import Gateway

# Every route needs a DBA key (see gateway.auth.access.ROUTE_ROLES); a database's versions also need a key
# that may use that database, and changing the global scope a key for every database (or an admin key).
router = APIRouter(prefix="/v1/guidelines", tags=["guidelines"], dependencies=[Depends(authorize)])

# Versions are Postgres integers: anything outside their range is a 422, never a database error.
Version = Annotated[int, Path(ge=1, le=2**31 - 1, description="A guideline version number.")]
# Postgres text cannot hold NUL: a name carrying one is a 422 here, not a driver error in the store (a 500).
DatabaseQuery = Annotated[str | None, Query(max_length=128, pattern=r"^[^\x00]*$", description="Only this "
                                            "database's own versions (and `in_force`: what its questions use "
                                            "now).")]
ScopeQuery = Annotated[Literal["all", "global"], Query(description="`global`: only the global versions "
                                                       "(ignored with `database`).")]

STORE = (errors.StoreNotConfigured, errors.StoreUnavailable, errors.Unauthorized, errors.Forbidden)
SCOPE = "Scopes: a version belongs to one database or to none (global). A database uses its own active " \
        "version, else the global active version, else the shipped guideline file."


def _only_global(scope: str, database: str | None) -> bool:
    return scope == "global" and database is None


@router.get("", response_model=GuidelineList, summary="List guideline versions", description=SCOPE,
            responses=openapi_responses(errors.UnknownDatabase, *STORE))
async def list_guidelines(database: DatabaseQuery = None, scope: ScopeQuery = "all",
                          gateway: Gateway = Depends(get_gateway),
                          principal: Principal = Depends(authorize)) -> GuidelineList:
    found = await gateway.guideline_listing(database, only_global=_only_global(scope, database), principal=principal)
    in_force = found["in_force"]
    return GuidelineList(active=found["active"], versions=[GuidelineSummary(**v) for v in found["versions"]],
                         active_by_database=found["active_by_database"],
                         in_force=GuidelineInForce(**in_force) if in_force else None)


@router.get("/events", response_model=GuidelineEvents, summary="Changes of the active guideline, newest first",
            description="Every activation, rollback and reset (back to the shipped default), with who and when.",
            responses=openapi_responses(*STORE))
async def list_events(database: DatabaseQuery = None, scope: ScopeQuery = "all",
                      limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
                      gateway: Gateway = Depends(get_gateway),
                      principal: Principal = Depends(authorize)) -> GuidelineEvents:
    found = await gateway.guideline_event_list(database, only_global=_only_global(scope, database), limit=limit,
                                               principal=principal)
    return GuidelineEvents(events=[GuidelineEventOut(**e) for e in found])


@router.get("/shipped", response_model=ShippedGuideline, summary="The shipped guideline file a database falls back to",
            description="The text of `<guidelines_dir>/<database>.md`, else `default.md`: what the database's "
            "questions use while neither its own nor a global stored version is active (see `in_force` on "
            "`GET /v1/guidelines?database=`). Needs no store.",
            responses=openapi_responses(errors.Unauthorized, errors.Forbidden, errors.UnknownDatabase))
async def get_shipped(database: Annotated[str, Query(min_length=1, max_length=128, pattern=r"^[^\x00]*$",
                                                     description="The database whose fallback file to show.")],
                      gateway: Gateway = Depends(get_gateway),
                      principal: Principal = Depends(authorize)) -> ShippedGuideline:
    return ShippedGuideline(**await gateway.shipped_guideline(database, principal=principal))


@router.get("/{version}", response_model=GuidelineDetail, summary="One version: text, provenance, evaluation",
            responses=openapi_responses(errors.UnknownGuidelineVersion, *STORE))
async def get_guideline(version: Version, gateway: Gateway = Depends(get_gateway),
                        principal: Principal = Depends(authorize)) -> GuidelineDetail:
    return GuidelineDetail(**await gateway.guideline_view(version, principal=principal))


@router.get("/{version}/regressions", response_model=RegressionReports,
            summary="The version's regression replays, newest first",
            description="Each replay of the verified set run before an activation of this candidate: what was "
            "right with the guideline in force and is wrong with the candidate, with a reason per question and "
            "the SQL before and after; suspect references are flagged and not counted. The newest report comes "
            "whole, the older ones as summaries.",
            responses=openapi_responses(errors.UnknownGuidelineVersion, *STORE))
async def list_regressions(version: Version,
                           limit: Annotated[int, Query(ge=1, le=100, description="At most this many.")] = 20,
                           gateway: Gateway = Depends(get_gateway),
                           principal: Principal = Depends(authorize)) -> RegressionReports:
    # The verdict (passed, regressed) is the whole replay's; the questions are only those the key may see.
    found = await gateway.regression_reports(version, limit=limit, principal=principal)
    return RegressionReports(reports=[RegressionReportOut(**r) for r in found])


@router.post(
    "/regenerate", response_model=RegenerateResponse, summary="Run MAGIC on the pending corrections now",
    description="Runs one regeneration and answers when it is done. With `database`, only that database's "
    "corrections are used and the candidate is that database's version; without, a global candidate is built "
    "from every database's corrections. Only one replica regenerates at a time; the others answer "
    "`regeneration_running`. A candidate whose provenance includes corrections no dba or admin reviewed "
    "(`unreviewed_corrections`) is never activated by a run: the outcome is `pending_review` and a DBA "
    "activates it with `POST /v1/guidelines/{version}/activate`.",
    responses=openapi_responses(errors.RegenerationRunning, errors.UnknownDatabase, errors.LLMNotConfigured,
                                errors.LLMUnavailable, errors.LLMBadOutput, *STORE),
)
async def regenerate(body: RegenerateRequest | None = None, gateway: Gateway = Depends(get_gateway),
                     principal: Principal = Depends(authorize)) -> RegenerateResponse:
    report = await gateway.regenerate(activate=body.activate if body else None,
                                      database=body.database if body else None, principal=principal)
    return RegenerateResponse(**report.as_dict())


@router.post(
    "/rollback", response_model=GuidelineDetail, summary="Go back to an earlier version of a scope",
    description="Re-activates `version`, or the scope's version that was active before the current one, "
    "without the gate (it was active once). To stop using stored versions altogether, use "
    "`POST /v1/guidelines/reset`.",
    responses=openapi_responses(errors.UnknownGuidelineVersion, errors.GuidelineNeverActive,
                                errors.UnknownDatabase, *STORE),
)
async def rollback(body: RollbackRequest | None = None, gateway: Gateway = Depends(get_gateway),
                   principal: Principal = Depends(authorize)) -> GuidelineDetail:
    body = body or RollbackRequest()
    activated = await gateway.rollback(body.version, database=body.database, principal=principal)
    return GuidelineDetail(**await gateway.guideline_view(activated, principal=principal))


@router.post(
    "/reset", response_model=GuidelineInForce, summary="Go back to the shipped default guideline",
    description="Retires the scope's active version: a database then uses the global version, or the shipped "
    "guideline file when none is active; globally, the shipped file is in force for every database without "
    "its own version. Recorded as a `reset` event (`GET /v1/guidelines/events`). Answers what is in force now.",
    responses=openapi_responses(errors.UnknownDatabase, *STORE),
)
async def reset(body: ResetRequest | None = None, gateway: Gateway = Depends(get_gateway),
                principal: Principal = Depends(authorize)) -> GuidelineInForce:
    found = await gateway.reset_guideline(body.database if body else None, principal=principal)
    return GuidelineInForce(**found.as_dict())


@router.post(
    "/{version}/activate", response_model=GuidelineDetail, summary="Activate a version",
    description="Activates the version within its scope (its database, or global). A candidate is replayed "
    "on held-out material first and activated only when it is not worse than the guideline it would replace "
    "(`force` skips that): whole questions through the pipeline on held-out verified examples when there are "
    "`magic.gate_question_min_examples` of them, else one reflection per held-out correction; the evaluation "
    "says which. Before that, the scope's verified set is replayed under both guidelines "
    "(`magic.replay_regressions`): a question right before and wrong with the candidate refuses it with "
    "`guideline_regressed`, naming each question, the reason and the SQL before and after (reports: "
    "`GET /v1/guidelines/{version}/regressions`). A version that was active before (a rollback) is activated at "
    "once.",
    responses=openapi_responses(errors.UnknownGuidelineVersion, errors.GuidelineGateFailed, errors.GuidelineRegressed,
                                errors.LLMNotConfigured, errors.LLMUnavailable, *STORE),
)
async def activate(version: Version, body: ActivateRequest | None = None,
                   gateway: Gateway = Depends(get_gateway),
                   principal: Principal = Depends(authorize)) -> GuidelineDetail:
    activated = await gateway.activate(version, force=body.force if body else False, principal=principal)
    return GuidelineDetail(**await gateway.guideline_view(activated, principal=principal))
