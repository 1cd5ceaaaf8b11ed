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
    # Conversations (gateway.pipeline.conversation): ``client`` owns them (``key:<id>``, or the X-Client-Id
    # with auth off); None keeps the question out of any conversation (eval). ``conversation_id`` continues
    # one of the client's conversations; without it, a question with a client starts a new one.
    conversation_id: str | None = None
    client: str | None = None
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
