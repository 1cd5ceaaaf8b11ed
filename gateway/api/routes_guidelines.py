"""Guideline lifecycle for DBAs: list and read versions, regenerate, activate (through the gate), roll back,
reset to the shipped default, per database or global."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query

from gateway import errors
from gateway.api.deps import get_gateway, get_state
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
from gateway.auth import ALL_DATABASES, Principal, Role
from gateway.auth.access import authorize
from gateway.feedback import store_of
from gateway.magic import lifecycle
from gateway.service import Gateway
from gateway.state import GatewayState
from gateway.store import guidelines, regressions
from gateway.store.guidelines import GuidelineVersion
from gateway.store.pool import store_faults

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


def _check(principal: Principal, database: str | None) -> None:
    """Reading: a database's versions need a key for that database (global ones any dba key)."""
    if database is not None:
        principal.check_database(database)


def _visible(principal: Principal, report: dict[str, Any] | None) -> dict[str, Any] | None:
    """A replay report or gate evaluation with only the questions of databases ``principal`` may use: a global
    version is replayed on every database's verified questions, and their SQL is no business of a DBA of one
    database. Counts are recomputed from what remains."""
    if report is None:
        return None
    out = dict(report)
    for key in ("items", "regressions"):
        if isinstance(out.get(key), list):
            out[key] = [i for i in out[key] if not isinstance(i, dict) or i.get("database") is None
                        or principal.may_use(i["database"])]
    if isinstance(out.get("counts"), dict) and isinstance(out.get("items"), list):
        counts = dict.fromkeys(out["counts"], 0)
        counts["replayed"] = len(out["items"])
        for item in out["items"]:
            counts[item["verdict"]] = counts.get(item["verdict"], 0) + 1
        out["counts"] = counts
    if "regressed" in out and isinstance(out.get("regressions"), list):
        out["regressed"] = len(out["regressions"])
    return out


def _detail(principal: Principal, version: GuidelineVersion) -> GuidelineDetail:
    return GuidelineDetail(**{**version.as_dict(), "evaluation": _visible(principal, version.evaluation)})


def _may_change(principal: Principal, database: str | None) -> None:
    """Changing a scope: a database's needs a key for it; the global one, which every database without its
    own version uses, needs a key for every database (``*``) or an admin key, so that a DBA of one database
    cannot change the prompts of the others."""
    if database is not None:
        principal.check_database(database)
    elif principal.role is not Role.ADMIN and ALL_DATABASES not in principal.databases:
        raise errors.Forbidden(f"API key {principal.name!r} may only change the guidelines of its databases "
                               f"({', '.join(sorted(principal.databases))}); the global guideline needs a key for "
                               "every database or an admin key", key=principal.key_id)


def _only_global(scope: str, database: str | None) -> bool:
    return scope == "global" and database is None


def _actor(principal: Principal) -> str:
    # The end user (else the API key) who changed it; the principal's name with auth off.
    return principal.owner if principal.user is not None or principal.key_id is not None else principal.name


@router.get("", response_model=GuidelineList, summary="List guideline versions", description=SCOPE,
            responses=openapi_responses(errors.UnknownDatabase, *STORE))
async def list_guidelines(database: DatabaseQuery = None, scope: ScopeQuery = "all",
                          state: GatewayState = Depends(get_state),
                          principal: Principal = Depends(authorize)) -> GuidelineList:
    _check(principal, database)
    store = store_of(state.store)
    with store_faults("the versions could not be read"):
        versions = await guidelines.list_all(store.pool, database=database, only_global=_only_global(scope, database))
        by_database = {db: v for db, v in (await guidelines.active_by_database(store.pool)).items()
                       if principal.may_use(db)}
        in_force = await lifecycle.in_force(state, store, database) if database is not None else None
        active = in_force.version if in_force is not None else (await lifecycle.in_force(state, store, None)).version
    return GuidelineList(active=active, versions=[GuidelineSummary(**v.summary()) for v in versions
                                                  if v.database is None or principal.may_use(v.database)],
                         active_by_database=by_database,
                         in_force=GuidelineInForce(**in_force.as_dict()) if in_force else None)


@router.get("/events", response_model=GuidelineEvents, summary="Changes of the active guideline, newest first",
            description="Every activation, rollback and reset (back to the shipped default), with who and when.",
            responses=openapi_responses(*STORE))
async def list_events(database: DatabaseQuery = None, scope: ScopeQuery = "all",
                      limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
                      state: GatewayState = Depends(get_state),
                      principal: Principal = Depends(authorize)) -> GuidelineEvents:
    _check(principal, database)
    with store_faults("the events could not be read"):
        found = await guidelines.events(store_of(state.store).pool, database=database,
                                        only_global=_only_global(scope, database), limit=limit)
    return GuidelineEvents(events=[GuidelineEventOut(**e.as_dict()) for e in found
                                   if e.database is None or principal.may_use(e.database)])


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
async def get_guideline(version: Version, state: GatewayState = Depends(get_state),
                        principal: Principal = Depends(authorize)) -> GuidelineDetail:
    with store_faults("the version could not be read"):
        found = await lifecycle.get(store_of(state.store), version)
    _check(principal, found.database)
    return _detail(principal, found)


@router.get("/{version}/regressions", response_model=RegressionReports,
            summary="The version's regression replays, newest first",
            description="Each replay of the verified set run before an activation of this candidate: what was "
            "right with the guideline in force and is wrong with the candidate, with a reason per question and "
            "the SQL before and after; suspect references are flagged and not counted. The newest report comes "
            "whole, the older ones as summaries.",
            responses=openapi_responses(errors.UnknownGuidelineVersion, *STORE))
async def list_regressions(version: Version,
                           limit: Annotated[int, Query(ge=1, le=100, description="At most this many.")] = 20,
                           state: GatewayState = Depends(get_state),
                           principal: Principal = Depends(authorize)) -> RegressionReports:
    store = store_of(state.store)
    with store_faults("the reports could not be read"):
        found = await lifecycle.get(store, version)
        _check(principal, found.database)
        reports = await regressions.for_version(store.pool, version, limit=limit)
    # The verdict (passed, regressed) is the whole replay's; the questions are only those the key may see.
    return RegressionReports(reports=[
        RegressionReportOut(**{**r.summary(), "counts": (_visible(principal, r.report) or {}).get("counts", {}),
                               "report": _visible(principal, r.report) if n == 0 else None})
        for n, r in enumerate(reports)])


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
async def regenerate(body: RegenerateRequest | None = None, state: GatewayState = Depends(get_state),
                     principal: Principal = Depends(authorize)) -> RegenerateResponse:
    database = body.database if body else None
    _may_change(principal, database)
    with store_faults("the regeneration did not finish; run it again"):
        report = await lifecycle.run_regeneration(state, store_of(state.store),
                                                  activate=body.activate if body else None, database=database)
    return RegenerateResponse(**report.as_dict())


@router.post(
    "/rollback", response_model=GuidelineDetail, summary="Go back to an earlier version of a scope",
    description="Re-activates `version`, or the scope's version that was active before the current one, "
    "without the gate (it was active once). To stop using stored versions altogether, use "
    "`POST /v1/guidelines/reset`.",
    responses=openapi_responses(errors.UnknownGuidelineVersion, errors.GuidelineNeverActive,
                                errors.UnknownDatabase, *STORE),
)
async def rollback(body: RollbackRequest | None = None, state: GatewayState = Depends(get_state),
                   principal: Principal = Depends(authorize)) -> GuidelineDetail:
    body = body or RollbackRequest()
    _may_change(principal, body.database)
    with store_faults("the version was not activated"):
        activated = await lifecycle.rollback(state, store_of(state.store), body.version, database=body.database,
                                             actor=_actor(principal))
    return _detail(principal, activated)


@router.post(
    "/reset", response_model=GuidelineInForce, summary="Go back to the shipped default guideline",
    description="Retires the scope's active version: a database then uses the global version, or the shipped "
    "guideline file when none is active; globally, the shipped file is in force for every database without "
    "its own version. Recorded as a `reset` event (`GET /v1/guidelines/events`). Answers what is in force now.",
    responses=openapi_responses(errors.UnknownDatabase, *STORE),
)
async def reset(body: ResetRequest | None = None, state: GatewayState = Depends(get_state),
                principal: Principal = Depends(authorize)) -> GuidelineInForce:
    database = body.database if body else None
    _may_change(principal, database)
    with store_faults("the guideline was not reset"):
        found = await lifecycle.reset(state, store_of(state.store), database, actor=_actor(principal))
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
                   state: GatewayState = Depends(get_state),
                   principal: Principal = Depends(authorize)) -> GuidelineDetail:
    store = store_of(state.store)
    with store_faults("the version was not activated"):
        _may_change(principal, (await lifecycle.get(store, version)).database)
        activated = await lifecycle.activate(state, store, version, force=body.force if body else False,
                                             actor=_actor(principal))
    return _detail(principal, activated)
