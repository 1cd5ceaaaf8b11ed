"""``GET /v1/whoami``: the caller's own key or end user, role and databases (the console hides pages it may
not use), and for an end user the OAuth client, scopes and row-policy values of the token."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import About, WhoAmI
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.service import Gateway

router = APIRouter(prefix="/v1", tags=["access"])


@router.get("/whoami", response_model=WhoAmI, summary="The caller's key: name, role and databases",
            description="Any valid key may ask about itself; nothing about other keys is shown.",
            responses=openapi_responses(errors.Unauthorized, errors.InvalidToken, errors.Forbidden))
async def whoami(gateway: Gateway = Depends(get_gateway), principal: Principal = Depends(authorize)) -> WhoAmI:
    return WhoAmI(**gateway.whoami(principal))


@router.get("/about", response_model=About, summary="Version, uptime and LLM of this gateway",
            description="For the console's Status page: the version, when the gateway started, whether a store "
            "is configured, the LLM model and, for a dba or admin key, the LLM endpoint's scheme, host and port.",
            responses=openapi_responses(errors.Unauthorized, errors.InvalidToken, errors.Forbidden))
async def about(gateway: Gateway = Depends(get_gateway), principal: Principal = Depends(authorize)) -> About:
    return About(**gateway.about(principal))
