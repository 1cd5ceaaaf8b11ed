"""``GET /v1/whoami``: the caller's own key or end user, role and databases (the console hides pages it may
not use), and for an end user the OAuth client, scopes and row-policy values of the token."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from gateway import errors
from gateway.api.deps import get_gateway, get_state
from gateway.api.models import About, WhoAmI
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.service import Gateway
from gateway.state import GatewayState

router = APIRouter(prefix="/v1", tags=["access"])


@router.get("/whoami", response_model=WhoAmI, summary="The caller's key: name, role and databases",
            description="Any valid key may ask about itself; nothing about other keys is shown.",
            responses=openapi_responses(errors.Unauthorized, errors.InvalidToken, errors.Forbidden))
async def whoami(state: GatewayState = Depends(get_state), principal: Principal = Depends(authorize)) -> WhoAmI:
    auth = state.auth
    return WhoAmI(name=principal.name, role=principal.role.value, databases=sorted(principal.databases),
                  auth_enabled=bool(auth is not None and auth.settings.enabled), user=principal.user,
                  client=principal.client, scopes=None if principal.scopes is None else sorted(principal.scopes),
                  policy=principal.policy, store=state.store is not None)


@router.get("/about", response_model=About, summary="Version, uptime and LLM of this gateway",
            description="For the console's Status page: the version, when the gateway started, whether a store "
            "is configured, the LLM model and, for a dba or admin key, the LLM endpoint's scheme, host and port.",
            responses=openapi_responses(errors.Unauthorized, errors.InvalidToken, errors.Forbidden))
async def about(gateway: Gateway = Depends(get_gateway), principal: Principal = Depends(authorize)) -> About:
    return About(**gateway.about(principal))
