"""``GET /v1/databases/{name}/rules``: the DBA's rules in force and ``rules check`` on them, over HTTP."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import ConsoleRules, RulesResponse
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


@router.get(
    "/databases/{name}/rules/console", response_model=ConsoleRules, summary="The rules edited from the console",
    description="What `rules/<name>/console.yaml` holds: hidden columns, instructions and limits. Needs a dba "
    "or admin key that may use the database.",
    responses=openapi_responses(errors.Unauthorized, errors.Forbidden, errors.UnknownDatabase),
)
async def get_console_rules(name: str, gateway: Gateway = Depends(get_gateway),
                            principal: Principal = Depends(authorize)) -> ConsoleRules:
    return ConsoleRules(**gateway.console_rules(name, principal=principal))


@router.put(
    "/databases/{name}/rules/console", response_model=RulesResponse,
    summary="Edit hidden columns, instructions and limits",
    description="Replaces `rules/<name>/console.yaml` (the DBA's other rule files are never rewritten). The edit "
    "is checked like `nl2sql-gateway rules check` against the live schema, merged with the other files: "
    "`rules_invalid` lists the problems and nothing is written. `rules_read_only` when the gateway cannot "
    "write the rules folder. A column the console hid before and the edit leaves out is written as "
    "`hidden: false`. Audited (log line `rules_edited`, and the store's `rules_edits` table). In force from "
    "the next question; the answer is the rules in force, as `GET /v1/databases/{name}/rules`.",
    responses=openapi_responses(errors.Unauthorized, errors.Forbidden, errors.UnknownDatabase, errors.RulesInvalid,
                                errors.RulesReadOnly, errors.DatabaseUnavailable, errors.MalformedBody,
                                errors.InvalidRequest),
)
async def put_console_rules(name: str, body: ConsoleRules, gateway: Gateway = Depends(get_gateway),
                            principal: Principal = Depends(authorize)) -> RulesResponse:
    return RulesResponse(**await gateway.edit_rules(name, body.hidden_columns, body.instructions, body.limits,
                                                    principal=principal))
