"""``POST /v1/ask``: a question in natural language, answered with checked, executed, validated SQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from gateway import errors
from gateway.api.deps import get_gateway, get_state
from gateway.api.models import AskRequest, AskResponse
from gateway.api.problems import openapi_responses, problem_response
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.learning.corrections import hand_over
from gateway.learning.feedback import audit_answer
from gateway.observability.logging import get_logger
from gateway.pipeline import Question, Thread, ask, ask_events, corrections_of, open_thread, token_budget
from gateway.pipeline.respond import Answer, sse, to_json
from gateway.service import Gateway
from gateway.state import GatewayState

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
    state: GatewayState = Depends(get_state),
    gateway: Gateway = Depends(get_gateway),
    principal: Principal = Depends(authorize),
) -> Response:
    request_id: str | None = getattr(request.state, "request_id", None)
    # The principal's scope, databases and ownership, and an LLM that can answer (unless a verified example
    # may without one), before a stream starts: a refusal is a plain problem response.
    q = gateway.question(body.database, body.question, evidence=body.evidence, max_rows=body.max_rows,
                         request_id=request_id, principal=principal, conversation_id=body.conversation_id,
                         client=x_client_id)
    thread = await open_thread(state, q)  # an unknown conversation is a plain problem response too
    if EVENT_STREAM in request.headers.get("accept", ""):
        # A spent token budget is a plain 429 too, not an event in a 200 stream.
        await token_budget.check(state.store, state.settings.llm, q.client)
        answers: list[Answer] = []
        return StreamingResponse(
            _events(state, q, answers, thread), media_type=EVENT_STREAM,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            background=BackgroundTask(_hand_over_streamed, state, q, answers),
        )
    answer = await ask(state, q, thread=thread)
    await audit_answer(state.store, answer, q)  # committed before the answer goes out: feedback may follow
    return Response(to_json(answer.as_dict()), media_type="application/json",
                    background=BackgroundTask(hand_over, state.corrections, corrections_of(answer, q)))


async def _events(state: GatewayState, q: Question, answers: list[Answer],
                  thread: Thread | None) -> AsyncIterator[bytes]:
    try:
        async for name, data in ask_events(state, q, answers, thread):
            if name == "answer":
                await audit_answer(state.store, answers[-1], q)
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


async def _hand_over_streamed(state: GatewayState, q: Question, answers: list[Answer]) -> None:
    for answer in answers:
        await hand_over(state.corrections, corrections_of(answer, q))
