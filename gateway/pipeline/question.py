"""The question the pipeline answers, as every entry point (HTTP, MCP, eval) hands it over."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Question:
    database: str
    question: str
    evidence: str | None = None
    max_rows: int | None = None
    request_id: str | None = None
    role: str | None = None  # the Postgres role of the caller's API key: every attempt runs as it
    # ``client`` owns the answer (gateway.auth.ownership.owner_of: ``user:<id>`` for an end user, ``key:<id>``
    # for an API key, the X-Client-Id with auth off): its audit row, its conversation, its token budget.
    # None keeps the question out of any conversation and budget (eval). ``conversation_id`` continues one
    # of the owner's conversations; without it, a question with a client starts a new one. ``end_user``
    # and ``via`` (the key or OAuth client it came through) are recorded with what the answer leaves.
    conversation_id: str | None = None
    client: str | None = None
    end_user: str | None = None
    via: str | None = None
    # The caller's row-policy values (gateway.auth.keys.Principal.claims): every attempt, sample and value
    # lookup made for this question runs under them.
    claims: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Earlier:
    """What a follow-up carries from its conversation's earlier turns (``gateway.pipeline.conversation``)."""

    prompt: str = ""  # the earlier turns as the generation and reflection prompts show them
    topic: str = ""  # their questions and SQL as plain text: the schema is pruned for them too
    may_clarify: bool = True  # False right after a clarification: the reply gets SQL, not another question


NO_EARLIER = Earlier()
