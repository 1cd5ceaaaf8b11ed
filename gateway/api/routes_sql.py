"""Routes for SQL that clients write themselves, and for what databases exist."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response, StreamingResponse

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.disconnect import cancel_on_disconnect
from gateway.api.models import (
    CheckRequest,
    CheckResponse,
    DatabasesResponse,
    SqlRequest,
    SqlResponse,
    StartersResponse,
)
from gateway.api.problems import openapi_responses
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.service import Gateway, QueryResult, dump_json

router = APIRouter(prefix="/v1", tags=["sql"])

COMMON = (errors.MalformedBody, errors.InvalidRequest, errors.PayloadTooLarge)
# see gateway.auth.access and gateway.auth.scopes
AUTH = (errors.Unauthorized, errors.Forbidden, errors.InsufficientScope, errors.StoreUnavailable)


@router.post(
    "/sql",
    response_model=SqlResponse,
    summary="Run a client's SQL on a named database",
    description="Checks the statement (deny by default), then runs exactly that text in a READ ONLY "
    "transaction with local timeouts, fetching at most `max_rows + 1` rows from a cursor. The planner's "
    "estimate is checked first (`cost_too_high`); rows are counted as they arrive (`result_too_large`, and "
    "`overloaded` when the process's result budget is spent). Large results are streamed. A client that "
    "disconnects gets its query cancelled.",
    responses=openapi_responses(*COMMON, *AUTH, errors.SqlTooLarge, errors.UnknownDatabase, errors.SqlBlocked,
                                errors.QueryError, errors.CostTooHigh, errors.ResultTooLarge, errors.StatementTimeout,
                                errors.Overloaded, errors.PoolExhausted, errors.DatabaseUnavailable,
                                errors.RulesUnavailable),
)
async def post_sql(body: SqlRequest, request: Request, gateway: Gateway = Depends(get_gateway),
                   principal: Principal = Depends(authorize)) -> Response:
    # A client that leaves gets its query cancelled and its pool connection back within moments.
    outcome = await cancel_on_disconnect(
        request, gateway.sql(body.database, body.sql, max_rows=body.max_rows, principal=principal))
    result = outcome.result
    head = {
        "database": body.database,
        "verdict": outcome.verdict.as_dict(),
        "columns": [{"name": c.name, "type": c.type} for c in result.columns],
    }
    tail = {
        "row_count": result.row_count,
        "truncated": result.truncated,
        "timings": outcome.timings,
        "request_id": request.state.request_id,
    }
    if result.size_bytes > STREAM_ABOVE_BYTES:
        return StreamingResponse(_stream_json(head, result, tail), media_type="application/json")
    # Rows are already JSON-ready; skipping response-model validation keeps large results cheap.
    payload = {**head, "rows": result.rows, **tail}
    encoded = dump_json(payload)
    if result.lease is None:
        return Response(encoded, media_type="application/json")
    # The body counts against the result budget until it has been sent.
    result.lease.hold_body(len(encoded))
    return _Charged(encoded, result)


class _Charged(Response):
    """A JSON answer whose body is charged to the result budget until it has been sent (or its send failed).

    It holds the result: the rows' charge goes when nothing refers to the result any more (its finalizer,
    gateway.execute.run), which without this reference would be as soon as the route returned, before
    the answer was written. After the send, on the event loop, the body's charge goes and the result is
    let go of."""

    media_type = "application/json"

    def __init__(self, body: bytes, result: QueryResult) -> None:
        super().__init__(body)
        self._result: QueryResult | None = result

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:  # sent, or never will be (the client left, the send was cancelled): either way let go
            result, self._result = self._result, None
            if result is not None and result.lease is not None:
                result.lease.drop_body(len(self.body))
            del result  # not kept by this frame either (a traceback of a failed send would keep it)


STREAM_ABOVE_BYTES = 1024 * 1024
# A streamed chunk exists twice while it is sent: as encoded here, and framed by the HTTP server (chunked
# transfer encoding writes size + chunk + CRLF as one new bytes object).
BODY_COPIES = 2
_CHUNK_BYTES = 128 * 1024


async def _stream_json(head: dict[str, Any], result: QueryResult, tail: dict[str, Any]) -> AsyncIterator[bytes]:
    """The same JSON as the small-result path, written in chunks: a large result is never copied whole into
    one string. The generator holds ``result``, so its rows stay charged to the result budget until sent,
    and each chunk is charged to it too from when it is built until it has been sent."""
    dump = dump_json  # total, as on the small-result path (lone surrogates, deep JSON)
    lease = result.lease
    yield dump(head)[:-1] + b', "rows": ['
    rows = result.rows
    per_chunk = max(1, _CHUNK_BYTES * len(rows) // max(result.size_bytes, 1))
    for start in range(0, len(rows), per_chunk):
        chunk = (b", " if start else b"") + b", ".join(dump(row) for row in rows[start:start + per_chunk])
        held = len(chunk) * BODY_COPIES
        if lease is not None:
            lease.hold_body(held)
        yield chunk  # resumed once the server has sent it
        if lease is not None:
            lease.drop_body(held)
        del chunk
    yield b"], " + dump(tail)[1:]


@router.post(
    "/check",
    response_model=CheckResponse,
    summary="Check a statement without running it",
    description="Returns the safety verdict; `allowed` is false with findings when the SQL would be blocked. "
    "A blocked statement is a normal 200 answer here, not an error.",
    responses=openapi_responses(*COMMON, *AUTH, errors.SqlTooLarge, errors.UnknownDatabase, errors.RulesUnavailable),
)
async def post_check(body: CheckRequest, request: Request, gateway: Gateway = Depends(get_gateway),
                     principal: Principal = Depends(authorize)) -> Response:
    verdict = gateway.check(body.sql, body.database, principal=principal)
    payload = {"verdict": verdict, "request_id": request.state.request_id}
    return Response(json.dumps(payload), media_type="application/json")


@router.get("/databases", response_model=DatabasesResponse, summary="List the target databases",
            description="Only the databases the caller's API key may use.", responses=openapi_responses(*AUTH))
async def get_databases(gateway: Gateway = Depends(get_gateway),
                        principal: Principal = Depends(authorize)) -> DatabasesResponse:
    return DatabasesResponse.model_validate({"databases": gateway.databases(principal)})


@router.get(
    "/databases/{name}/semantic",
    summary="The database's semantic model",
    description="Metrics (type, synonyms, SQL definition, the dimensions they can be grouped by), dimensions "
    "(time grains, synonyms), default filters and verified questions. Metrics and dimensions that read what "
    "the rules hide are left out. `configured` is false when the database has no semantic model.",
    responses=openapi_responses(*AUTH, errors.UnknownDatabase, errors.SemanticUnavailable, errors.RulesUnavailable),
)
async def get_semantic(name: str, gateway: Gateway = Depends(get_gateway),
                       principal: Principal = Depends(authorize)) -> Response:
    return Response(json.dumps(gateway.semantic(name, principal=principal)), media_type="application/json")


@router.get(
    "/databases/{name}/schema",
    summary="Introspected schema of a database, a page at a time",
    description="Tables and views the gateway's role may read, with columns, types, keys and comments. "
    "Tables and columns that the database's rules hide are left out. Paginated: `limit` tables from "
    "`offset` (the answer's `next_offset` is the next page's, null on the last; `total` counts them all). "
    "`detail=tables` lists tables only (schema, name, kind, comment, estimated rows) for a first look at a "
    "large database; ask for chosen ones with `tables=a,b` and `detail=full`. `detail=auto` (the default) is "
    "full for a page of at most 50 tables. Served from the schema cache, which follows schema changes.",
    responses=openapi_responses(*AUTH, errors.UnknownDatabase, errors.DatabaseUnavailable, errors.RulesUnavailable),
)
async def get_schema(name: str, gateway: Gateway = Depends(get_gateway),
                     principal: Principal = Depends(authorize),
                     detail: Literal["auto", "tables", "full"] = Query("auto", description="How much per table."),
                     limit: int = Query(100, ge=1, le=1000, description="Most tables in the page."),
                     offset: int = Query(0, ge=0, description="Tables to skip (the previous page's next_offset)."),
                     tables: str | None = Query(None, max_length=10_000,
                                                description="Only these tables, comma-separated.")) -> Response:
    wanted = [t.strip() for t in tables.split(",") if t.strip()] if tables else None
    schema = await gateway.schema(name, tables=wanted, detail=detail, limit=limit, offset=offset,
                                  principal=principal)
    return Response(json.dumps(schema, default=str), media_type="application/json")


@router.get(
    "/databases/{name}/starters",
    response_model=StartersResponse,
    summary="Starter questions for a database",
    description="Questions the database is known to answer well, to offer before the first question: its "
    "verified (approved) questions, oldest first, at most 8; these also answer without an LLM when "
    "`store.exact_match_answers` is on. Empty without a store, and for a caller under a row policy (stored "
    "questions may name another tenant's values).",
    responses=openapi_responses(*AUTH, errors.UnknownDatabase),
)
async def get_starters(name: str, gateway: Gateway = Depends(get_gateway),
                       principal: Principal = Depends(authorize)) -> StartersResponse:
    return StartersResponse.model_validate({"starters": await gateway.starters(name, principal=principal)})
