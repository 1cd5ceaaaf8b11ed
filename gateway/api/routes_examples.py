"""Review of proposed examples: what one client teaches reaches others only after a dba or admin approves it."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query

from gateway import errors
from gateway.api.deps import get_state
from gateway.api.models import ExampleList, ExampleOut, ReviewRequest
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.feedback import store_of
from gateway.ownership import owner_of
from gateway.review import decide, listing, with_context
from gateway.state import GatewayState

# Every route needs a dba key (see gateway.auth.access.ROUTE_ROLES).
router = APIRouter(prefix="/v1/examples", tags=["examples"])

ExampleId = Annotated[int, Path(ge=1, le=2**63 - 1, description="An example id (`example_id` in feedback).")]
COMMON = (errors.Unauthorized, errors.Forbidden, errors.StoreNotConfigured, errors.StoreUnavailable)
REVIEW_DESCRIPTION = (
    "Needs a dba or admin key that may use the example's database (another database's example answers "
    "`unknown_example`). The decision, the reviewer and the note are stored with the example. "
)


@router.get(
    "", response_model=ExampleList, summary="List examples, e.g. the review queue (`status=proposed`)",
    description="Question/SQL pairs sent as feedback are `proposed`; only `approved` ones are used as few-shot "
    "examples and exact answers. Lists oldest first, only databases the key may use.",
    responses=openapi_responses(*COMMON),
)
async def list_examples(
    status: Annotated[Literal["proposed", "approved", "rejected"] | None, Query(
        description="Only examples in this state; all when absent.")] = None,
    database: Annotated[str | None, Query(description="Only this database's examples.", max_length=128,
                                          pattern=r"^[^\x00]*$")] = None,  # Postgres text holds no NUL
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
    state: GatewayState = Depends(get_state),
    principal: Principal = Depends(authorize),
) -> ExampleList:
    store = store_of(state.store)
    found = await listing(store, status, database, principal.may_use, limit)
    return ExampleList(examples=[ExampleOut(**e) for e in await with_context(store, found)])


@router.post(
    "/{example_id}/approve", response_model=ExampleOut, summary="Approve a proposed example",
    description=REVIEW_DESCRIPTION + "From then on it is used (while the database's current rules still allow "
    "its SQL), and the correction that taught it counts as reviewed for guideline regeneration. Only a "
    "`proposed` example can be approved (`example_already_reviewed` otherwise).",
    responses=openapi_responses(errors.UnknownExample, errors.ExampleAlreadyReviewed, *COMMON),
)
async def approve(example_id: ExampleId, body: ReviewRequest | None = None,
                  state: GatewayState = Depends(get_state),
                  principal: Principal = Depends(authorize)) -> ExampleOut:
    decided = await decide(store_of(state.store), example_id, "approved", reviewer=owner_of(principal).id,
                           note=body.note if body else None, may_use=principal.may_use)
    return ExampleOut(**decided.as_dict())


@router.post(
    "/{example_id}/reject", response_model=ExampleOut, summary="Reject a proposed example, or withdraw an approved one",
    description=REVIEW_DESCRIPTION + "A rejected example is never used, and the correction that taught it leaves "
    "MAGIC's queue. Rejecting an already rejected example answers `example_already_reviewed`.",
    responses=openapi_responses(errors.UnknownExample, errors.ExampleAlreadyReviewed, *COMMON),
)
async def reject(example_id: ExampleId, body: ReviewRequest | None = None,
                 state: GatewayState = Depends(get_state),
                 principal: Principal = Depends(authorize)) -> ExampleOut:
    decided = await decide(store_of(state.store), example_id, "rejected", reviewer=owner_of(principal).id,
                           note=body.note if body else None, may_use=principal.may_use)
    return ExampleOut(**decided.as_dict())
