"""``GET /v1/databases/{name}/rules``: the DBA's rules in force and ``rules check`` on them, over HTTP."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import RulesResponse
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.service import Gateway

# Needs a dba key (gateway.auth.access.ROUTE_ROLES): the answer names what the rules hide.
router = APIRouter(prefix="/v1", tags=["rules"])


@router.get(
    "/databases/{name}/rules", response_model=RulesResponse, summary="Rules in force and their check",
    description="What the database's rule files say (hidden tables and columns, instructions, extra functions, "
    "limits, required conditions, result checks) and the problems `nl2sql-gateway rules check` finds in them "
    "against the live schema. Needs a dba or admin key that may use the database.",
    responses=openapi_responses(errors.Unauthorized, errors.Forbidden, errors.UnknownDatabase,
                                errors.DatabaseUnavailable),
)
async def get_rules(name: str, gateway: Gateway = Depends(get_gateway),
                    principal: Principal = Depends(authorize)) -> RulesResponse:
    return RulesResponse(**await gateway.rules(name, principal=principal))
