"""``POST /v1/ask``: a question in natural language, answered with checked, executed, validated SQL."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from gateway import errors
from gateway.api.deps import get_gateway
from gateway.api.models import AskRequest, AskResponse
from gateway.api.problems import openapi_responses, problem_response
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.observability.logging import get_logger
from gateway.service import Answer, Gateway, Question, sse, to_json

router = APIRouter(prefix="/v1", tags=["ask"])
log = get_logger(__name__)

EVENT_STREAM = "text/event-stream"
STREAM_DOC = (
    "With `Accept: text/event-stream` the answer streams as server-sent events: one `attempt` event per "
    "attempt as it is validated (the AttemptOut shape; with `ask.candidates` > 1 the candidates' attempts "
    "arrive as they finish, followed by one `candidates` event, the AskResponse's `candidates` object), then "
    "one `answer` event (the AskResponse shape), or a "
    "`problem` event (a Problem) when the question fails after the stream started."
)


@router.post(
    "/ask",
    response_model=AskResponse,
    summary="Answer a question with SQL the gateway generated, checked, ran and validated",
    description="Generates SQL with the LLM, checks it (blocked SQL never runs), runs it read-only, validates "
    "the result and reflects on failures or suspicious results until an attempt passes, the SQL repeats, "
    "`ask.max_iterations` is reached or the time budget is spent. Every answer is a turn of a conversation "
    "(`conversation_id`, with a store): send the id back to ask a follow-up. When the question is ambiguous "
    "and the database's `ask.clarifications` allows it, the answer is `needs_clarification` with the question "
    "to put to the user; the reply, sent in the same conversation, resolves it. " + STREAM_DOC,
    responses={
        200: {"content": {EVENT_STREAM: {"schema": {"type": "string"}}}, "description": "The answer, as JSON "
              "or as server-sent events."},
        **openapi_responses(errors.MalformedBody, errors.InvalidRequest, errors.PayloadTooLarge,
                            errors.Unauthorized, errors.Forbidden, errors.InsufficientScope, errors.StoreUnavailable,
                            errors.UnknownDatabase, errors.LLMNotConfigured, errors.LLMUnavailable,
                            errors.LLMBadOutput, errors.DeadlineExceeded, errors.DatabaseUnavailable,
                            errors.UnknownConversation, errors.ConversationDatabaseMismatch,
                            errors.StoreNotConfigured, errors.RulesUnavailable, errors.TooManyRequests,
                            errors.TokenBudgetExceeded),
    },
)
async def post_ask(
    body: AskRequest,
    request: Request,
    x_client_id: Annotated[str | None, Header(
        description="Who owns the answer and its conversation when auth is off; with auth, the end user "
        "(else the API key) does.")] = None,
    gateway: Gateway = Depends(get_gateway),
    principal: Principal = Depends(authorize),
) -> Response:
    request_id: str | None = getattr(request.state, "request_id", None)
    # The principal's scope, databases and ownership, and an LLM that can answer (unless a verified example
    # may without one), before a stream starts: a refusal is a plain problem response.
    q = gateway.question(body.database, body.question, evidence=body.evidence, max_rows=body.max_rows,
                         request_id=request_id, principal=principal, conversation_id=body.conversation_id,
                         client=x_client_id)
    thread = await gateway.conversation(q)  # an unknown conversation is a plain problem response too
    if EVENT_STREAM in request.headers.get("accept", ""):
        answers: list[Answer] = []
        # A spent token budget is a plain 429 too, not an event in a 200 stream.
        events = await gateway.answer_events(q, answers, thread)
        return StreamingResponse(
            _events(events, q), media_type=EVENT_STREAM,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            background=BackgroundTask(gateway.hand_over, q, answers),
        )
    answer = await gateway.answer_audited(q, thread)  # audited before the answer goes out: feedback may follow
    return Response(to_json(answer.as_dict()), media_type="application/json",
                    background=BackgroundTask(gateway.hand_over, q, [answer]))


async def _events(events: AsyncGenerator[tuple[str, Any], None], q: Question) -> AsyncIterator[bytes]:
    try:
        async with aclosing(events):  # closing the stream (the client left) cancels the question
            async for name, data in events:
                yield sse(name, data)
    except errors.GatewayError as exc:
        yield sse("problem", _problem(exc, q.request_id))
    except Exception as exc:  # noqa: BLE001 - a stream cannot switch to a 500; report it as a problem event
        log.error("unhandled_error", error=repr(exc), exc_info=exc)
        yield sse("problem", _problem(errors.GatewayError("an unexpected error occurred; it has been logged"),
                                      q.request_id))


def _problem(error: errors.GatewayError, request_id: str | None) -> Any:
    # The same body the problem handler sends, so stream clients parse one shape.
    return json.loads(bytes(problem_response(error, request_id).body))
