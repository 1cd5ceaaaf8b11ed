"""A scripted OpenAI-compatible server on loopback, for tests, benchmarks and offline evaluation.

It answers ``POST /v1/chat/completions`` (and ``GET /v1/models``) over real HTTP, so the gateway's LLM
client, the ``openai`` SDK, its retries and timeouts all run for real. What it answers is a script:

>>> llm = ScriptedLLM()
>>> llm.add(lambda req: "<sql>SELECT 1</sql>" if "how many" in req.last_user else None)  # doctest: +SKIP
>>> llm.add_reply("<sql>SELECT 2</sql>", times=1)  # doctest: +SKIP

Rules are tried in the order they were added; the first that answers wins. A rule returns a string (the
assistant message), a :class:`Reply` (status code, delay, raw body, usage, or ``hang``: an endpoint that
accepts the call and never answers) or None to pass. Every request
is recorded in ``llm.requests`` so that tests can assert on prompts.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.testing import loopback


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    # Answer only once this is set (at most 120 s later): a test decides when, instead of guessing a delay.
    hold: threading.Event | None = None
    raw_body: str | None = None  # sent verbatim instead of a completion (malformed output tests)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    hang: bool = False  # accept the call and never answer (until the caller gives up and disconnects)


@dataclass
class LLMRequest:
    body: dict[str, Any]
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def system(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "system")

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""

    @property
    def text(self) -> str:
        """Every message's content joined: what a test greps to see what the LLM was shown."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


Rule = Callable[[LLMRequest], "str | Reply | None"]


@dataclass
class _Counted:
    rule: Rule
    times: int | None


@dataclass
class ScriptedLLM:
    """Start with :meth:`start` (or as a context manager); ``base_url`` ends in ``/v1``."""

    model: str = "scripted-model"
    default: str | Reply | None = None
    requests: list[LLMRequest] = field(default_factory=list)
    _rules: list[_Counted] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    port: int = 0

    # --- script -----------------------------------------------------------------------------------
    def add(self, rule: Rule, times: int | None = None) -> None:
        with self._lock:
            self._rules.append(_Counted(rule, times))

    def add_reply(self, reply: str | Reply, *, when: str | None = None, times: int | None = None) -> None:
        """Answer ``reply`` to requests whose messages contain ``when`` (any request if None)."""
        self.add(lambda req: reply if when is None or when in req.text else None, times)

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()
            self.requests.clear()
            self.default = None

    def _answer(self, request: LLMRequest) -> str | Reply | None:
        with self._lock:
            self.requests.append(request)
            for counted in list(self._rules):
                answer = counted.rule(request)
                if answer is None:
                    continue
                if counted.times is not None:
                    counted.times -= 1
                    if counted.times <= 0:
                        self._rules.remove(counted)
                return answer
            return self.default

    # --- HTTP -------------------------------------------------------------------------------------
    async def _completions(self, request: Request) -> Response:
        body = await request.json()
        answer = self._answer(LLMRequest(body, time.monotonic()))
        if answer is None:
            return JSONResponse({"error": {"message": "the script has no answer for this request"}}, 500)
        reply = answer if isinstance(answer, Reply) else Reply(content=answer)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.hold is not None:
            until = time.monotonic() + 120
            while not reply.hold.is_set() and time.monotonic() < until:
                await asyncio.sleep(0.01)
        while reply.hang and not await request.is_disconnected():
            if self._server is not None and self._server.should_exit:
                break
            await asyncio.sleep(0.05)
        if reply.raw_body is not None:
            return Response(reply.raw_body, status_code=reply.status, media_type="application/json")
        if reply.status != 200:
            return JSONResponse({"error": {"message": f"scripted status {reply.status}"}}, reply.status)
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else _tokens(body)
        completion_tokens = (reply.completion_tokens if reply.completion_tokens is not None
                             else max(1, len(reply.content) // 4))
        return JSONResponse({
            "id": "chatcmpl-" + uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "test"}]})

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedLLM:
        app = Starlette(routes=[
            Route("/v1/chat/completions", self._completions, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ])
        self._server, self._thread, self.port = loopback.serve(app, "scripted LLM server", self.port)
        return self

    def stop(self) -> None:
        loopback.stop(self._server, self._thread)

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _tokens(body: dict[str, Any]) -> int:
    return max(1, sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4)
