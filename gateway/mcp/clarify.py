"""Clarifying questions through MCP elicitation: ``ask`` puts the gateway's question to the user and answers.

When the model finds a question ambiguous it asks back instead of guessing (status ``needs_clarification``,
:mod:`gateway.pipeline.clarify`). A client that declared form elicitation gets that question as an
elicitation request (the options as a choice list, or a free-text field), and ``ask`` answers the user's
reply with the clarification in view (in the same stored conversation, or in one held in memory without a
store: :func:`gateway.pipeline.conversation.replying`). The reply's answer is the tool's result; it never
asks a second time. A client without elicitation, a user who declines or cancels, and a transport that
cannot carry the request get today's result: ``needs_clarification`` with the question and options.

How the request travels depends on the protocol the call speaks:

- 2025 (initialize handshake): an ``elicitation/create`` request during the call, on the call's own channel
  (stdio; stateless HTTP has no channel back to a call, so there it answers ``needs_clarification``);
- 2026-07-28: the call returns ``input_required`` with the elicitation and a ``requestState``; the client
  retries the same call with the user's answer. The state (who asked, the first answer) is sealed by the
  SDK's :class:`~mcp.server.request_state.RequestStateBoundary` (AES-GCM under a key of this process, bound to
  the tool and its exact arguments, ten minutes), so a client can neither read nor forge it; it also names
  its owner, checked again on the retry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp import types
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway import errors

KEY = "clarify"  # the input request's key in an input_required result
STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Dialog:
    """How a tool call may put a question to its user: the client's elicitation, in the call's protocol."""

    ctx: ServerRequestContext[Any, Any] | None
    modern: bool  # 2026-07-28: input_required and a retry; else a request during the call
    responses: dict[str, Any] | None = None  # the retry's answers (modern)
    state: str | None = None  # the retry's unsealed requestState (modern)

    @classmethod
    def of(cls, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Dialog:
        return cls(ctx, ctx.protocol_version in MODERN_PROTOCOL_VERSIONS,
                   dict(params.input_responses) if params.input_responses else None, params.request_state)

    @property
    def supported(self) -> bool:
        """The client declared form elicitation (an empty ``elicitation`` object means form, as in 2025-06-18)
        and, before 2026-07-28, this call has a channel to send it on."""
        if self.ctx is None:
            return False
        capabilities = self.ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if elicitation is None or (elicitation.url is not None and elicitation.form is None):
            return False
        return self.modern or self.ctx.session.can_send_request


@dataclass(frozen=True, slots=True)
class Pending:
    """What a retry needs from the first round: who asked and the ``needs_clarification`` result."""

    owner: str
    first: dict[str, Any]  # the first round's structured result (status needs_clarification)
    conversation_id: str | None = None  # the stored conversation holding the first round, if any

    def sealed(self) -> str:
        return json.dumps({"v": STATE_VERSION, "owner": self.owner, "first": self.first,
                           "conversation_id": self.conversation_id}, separators=(",", ":"), default=str)

    @classmethod
    def unsealed(cls, state: str, owner: str) -> Pending:
        try:
            data = json.loads(state)
            conversation = data.get("conversation_id")
            pending = cls(str(data["owner"]), dict(data["first"]), None if conversation is None else str(conversation))
            ok = data.get("v") == STATE_VERSION and pending.first.get("status") == "needs_clarification"
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            raise errors.InvalidRequest("requestState is not one this server's ask minted")
        if pending.owner != owner:  # sealed for another caller: as if it did not exist
            raise errors.InvalidRequest("requestState belongs to another caller; ask again")
        return pending


def message_of(clarification: dict[str, Any]) -> str:
    return f"The gateway needs to know what you mean: {clarification.get('question', '')}"


def schema_of(clarification: dict[str, Any]) -> dict[str, Any]:
    """The form: one field, the options as a choice list when the model offered some, else free text."""
    field: dict[str, Any] = {"type": "string", "title": str(clarification.get("question", ""))[:200],
                             "description": "Your answer to the gateway's question."}
    options = [str(o) for o in clarification.get("options") or []]
    if options:
        field["enum"] = options
    else:
        field.update(minLength=1, maxLength=4000)
    return {"type": "object", "properties": {"answer": field}, "required": ["answer"]}


def input_required(pending: Pending) -> types.InputRequiredResult:
    """The 2026-07-28 round trip: ask the client to elicit, and to send ``pending`` back with the answer."""
    clarification = pending.first.get("clarification") or {}
    request = types.ElicitRequest(params=types.ElicitRequestFormParams(
        message=message_of(clarification), requested_schema=schema_of(clarification)))
    return types.InputRequiredResult(input_requests={KEY: request}, request_state=pending.sealed())


async def elicit(dialog: Dialog, clarification: dict[str, Any]) -> str | None:
    """The 2025 way: an ``elicitation/create`` request during the call; the reply, or None when the user
    declined or cancelled (or the client could not ask)."""
    assert dialog.ctx is not None
    try:
        result = await dialog.ctx.session.elicit_form(message_of(clarification), schema_of(clarification),
                                                      related_request_id=dialog.ctx.request_id)
    except Exception:  # noqa: BLE001 - the client could not ask: the result says what to ask instead
        return None
    return chosen(result, clarification)


def reply_of(dialog: Dialog, clarification: dict[str, Any]) -> str | None:
    """The 2026-07-28 retry's answer, or None when the user declined or cancelled."""
    response = (dialog.responses or {}).get(KEY)
    return None if response is None else chosen(response, clarification)


def chosen(result: Any, clarification: dict[str, Any]) -> str | None:
    """The user's answer from an elicitation result (a model or its JSON), checked like a question: one of
    the options when there were options, a non-empty text otherwise."""
    data = result.model_dump() if hasattr(result, "model_dump") else result
    if not isinstance(data, dict) or data.get("action") != "accept":
        return None
    content = data.get("content")
    answer = content.get("answer") if isinstance(content, dict) else None
    if not isinstance(answer, str) or not answer.strip() or len(answer) > 4000 or "\x00" in answer:
        raise errors.InvalidRequest("the elicitation's answer must be a text of 1 to 4000 characters (no NUL) "
                                    "in `answer`")
    options = [str(o) for o in clarification.get("options") or []]
    if options and answer not in options:
        raise errors.InvalidRequest("the elicitation's answer must be one of the options offered",
                                    options=options)
    return answer.strip()
