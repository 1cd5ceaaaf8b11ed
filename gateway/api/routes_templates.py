"""Trusted answers over HTTP: templates (list, get, create, delete, run) and suggestions from the log.

Every route admits any key (gateway.auth.access.ROUTE_ROLES); ``Gateway`` decides the rest: creating,
deleting and suggestions need a dba or admin, and a template reading what the caller may not read is
``unknown_template`` to it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from starlette.responses import Response

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import (
    AskResponse,
    TemplateCreate,
    TemplateList,
    TemplateOut,
    TemplateRun,
    TemplateSuggestion,
    TemplateSuggestions,
)
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.pipeline.respond import to_json
from gateway.service import Gateway

router = APIRouter(prefix="/v1/templates", tags=["templates"])

TemplateName = Annotated[str, Path(min_length=1, max_length=63, pattern=r"^[a-z][a-z0-9_]*$",
                                   description="A template's name.")]
COMMON = (errors.Unauthorized, errors.Forbidden, errors.InsufficientScope, errors.StoreNotConfigured,
          errors.StoreUnavailable)


@router.get("", response_model=TemplateList, summary="List the templates this key may use",
            description="Templates of the databases the key may use, by name, with their parameters (bound column, "
            "type, default, known values) and example questions; `starter` is the first question with the defaults "
            "filled in. Templates reading a column the key's Postgres role may not read are left out; a caller "
            "under a row policy is shown no defaults.",
            responses=openapi_responses(errors.UnknownDatabase, *COMMON))
async def list_templates(
    database: Annotated[str | None, Query(max_length=128, pattern=r"^[^\x00]*$",
                                          description="Only this database's templates.")] = None,
    gateway: Gateway = Depends(get_gateway), principal: Principal = Depends(authorize),
) -> TemplateList:
    return TemplateList(templates=[TemplateOut(**t) for t in await gateway.templates(database, principal=principal)])


@router.post("", response_model=TemplateOut, status_code=201, summary="Create a template (dba)",
             description="Promote an approved example (`example_id`) or a DBA's SQL to a template. The SQL uses "
             "`$1 .. $n`, one per parameter, in order; each parameter is bound to a column (`table.column`) and "
             "typed from it; each example question holds each parameter's `{name}` slot once. The template must "
             "run with its defaults before it is stored. Committed before the 201.",
             responses=openapi_responses(errors.TemplateInvalid, errors.TemplateExists, errors.TemplateValueInvalid,
                                         errors.UnknownExample, errors.UnknownDatabase, errors.InvalidRequest, *COMMON))
async def create_template(body: TemplateCreate, gateway: Gateway = Depends(get_gateway),
                          principal: Principal = Depends(authorize)) -> TemplateOut:
    created = await gateway.create_template(
        body.database, body.name, sql=body.sql, parameters=[p.model_dump(exclude_none=True) for p in body.parameters],
        questions=body.questions, description=body.description, example_id=body.example_id, principal=principal)
    return TemplateOut(**created)


@router.get("/suggestions", response_model=TemplateSuggestions, summary="Questions worth a template (dba)",
            description="Questions asked at least `templates.suggest_min_asked` times whose answers were marked "
            "correct or approved as examples, with the counts (`asked`, `confirmed`, `approved`), the SQL of the "
            "latest confirmed answer and the example to promote, most asked first. Questions a template already "
            "answers are left out.",
            responses=openapi_responses(errors.UnknownDatabase, *COMMON))
async def suggestions(
    database: Annotated[str | None, Query(max_length=128, pattern=r"^[^\x00]*$",
                                          description="Only this database's questions.")] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="At most this many.")] = 50,
    gateway: Gateway = Depends(get_gateway), principal: Principal = Depends(authorize),
) -> TemplateSuggestions:
    found = await gateway.template_suggestions(database, limit=limit, principal=principal)
    return TemplateSuggestions(suggestions=[TemplateSuggestion(**s) for s in found])


@router.get("/{name}", response_model=TemplateOut, summary="One template",
            responses=openapi_responses(errors.UnknownTemplate, *COMMON))
async def get_template(name: TemplateName, gateway: Gateway = Depends(get_gateway),
                       principal: Principal = Depends(authorize)) -> TemplateOut:
    return TemplateOut(**await gateway.template(name, principal=principal))


@router.delete("/{name}", status_code=204, summary="Delete a template (dba)",
               responses=openapi_responses(errors.UnknownTemplate, *COMMON))
async def delete_template(name: TemplateName, gateway: Gateway = Depends(get_gateway),
                          principal: Principal = Depends(authorize)) -> Response:
    await gateway.delete_template(name, principal=principal)
    return Response(status_code=204)


@router.post("/{name}/run", response_model=AskResponse, summary="Answer with a template and chosen values",
             description="Runs the template with `parameters` (its defaults for the rest) as the key: its Postgres "
             "role and row policy apply. Each value is checked against its column as the key may read it: a text "
             "column with known values takes only those (any case), numbers must fit; a value outside answers "
             "`template_value_invalid` (422) with `suggestions`, the closest known values. The answer is the "
             "`POST /v1/ask` shape with `trusted` (`template`, `parameters`, `run`); it is audited, so feedback "
             "can name its `request_id`.",
             responses=openapi_responses(errors.UnknownTemplate, errors.TemplateValueInvalid, errors.InvalidRequest,
                                         errors.DatabaseUnavailable, *COMMON))
async def run_template(name: TemplateName, request: Request, body: TemplateRun | None = None,
                       x_client_id: Annotated[str | None, Header(description="Who owns the answer with auth "
                                                                 "off.")] = None,
                       gateway: Gateway = Depends(get_gateway), principal: Principal = Depends(authorize)) -> Response:
    values: dict[str, Any] = dict(body.parameters) if body else {}
    answer = await gateway.run_template(name, {k: str(v) for k, v in values.items()},
                                        max_rows=body.max_rows if body else None,
                                        request_id=getattr(request.state, "request_id", None), principal=principal,
                                        client=x_client_id)
    return Response(to_json(answer.as_dict()), media_type="application/json")
