"""The LLM endpoint's HTTP connections: several small pools instead of one large one.

One httpx connection pool serialises many concurrent calls on the event loop: every request and every
response close walks the whole pool (``_assign_requests_to_connections``), asking each connection whether
it expired (a ``getpeername`` and a socket readability poll each). With 200 calls in flight on one pool of
200 connections that walk costs O(n) per event, O(n^2) per burst, and it was the largest CPU item of
``POST /v1/ask`` under 200 concurrent questions (``bench/ask.py``, profiled with py-spy). So the
connections are split into pools of at most :data:`POOL_CONNECTIONS`, one ``openai.AsyncOpenAI`` client
each, and every call goes to the least busy pool; pools are opened as the load needs them.

A call goes through the SDK's own request path (``client.post``: its headers, auth, timeouts and its
status-code errors: ``RateLimitError``, ``InternalServerError``, ``APIConnectionError`` ...) but asks for the
raw ``httpx`` response and reads the JSON itself: the SDK's typed request transform and response model
construction cost several times the rest of the call, for three fields the gateway reads.
"""

from __future__ import annotations

import math
from typing import Any

import httpx2  # the openai SDK's HTTP client (its dependency): its pool limits
import openai

from gateway.settings import LLMSettings

__all__ = ["POOL_CONNECTIONS", "SPARE_CONNECTIONS", "LLMPools"]

POOL_CONNECTIONS = 16  # per pool: the per-event walk over a pool stays short
SPARE_CONNECTIONS = 2  # beyond llm.max_concurrency: the readiness probe (GET /models) skips the queue


class LLMPools:
    """``openai.AsyncOpenAI`` clients, each with its own connection pool; calls go to the least busy one.

    The connections add up to ``llm.max_concurrency`` plus :data:`SPARE_CONNECTIONS`, so every call the
    semaphore admits gets a connection at once, and a burst's connections stay open for the next burst.
    """

    def __init__(self, settings: LLMSettings, api_key: str, *, per_pool: int = POOL_CONNECTIONS) -> None:
        self.settings = settings
        self._api_key = api_key
        total = settings.max_concurrency + SPARE_CONNECTIONS
        self.per_pool = max(1, min(per_pool, total))
        self.max_pools = math.ceil(total / self.per_pool)
        self.clients: list[openai.AsyncOpenAI] = []
        self.busy: list[int] = []  # calls in flight per client, same index
        self.peak: list[int] = []  # the most calls a client ever had in flight (tests check the bound)
        # One TLS context for all pools, made as each client would make its own (the CA bundle, the
        # SSL_CERT_FILE/SSL_CERT_DIR environment): loading the CAs took ~4 ms per pool, paid by the first burst.
        self._tls = httpx2.create_ssl_context(verify=True, trust_env=True)
        self._open_pool()  # the first pool at once: the others when the load needs them

    @property
    def base_url(self) -> str:
        return str(self.clients[0].base_url)

    def _open_pool(self) -> None:
        settings = self.settings
        http = openai.DefaultAsyncHttpx2Client(
            limits=httpx2.Limits(max_connections=self.per_pool, max_keepalive_connections=self.per_pool),
            timeout=settings.timeout_s, verify=self._tls,
        )
        # The SDK's own retries are off: gateway.llm.client retries within the request's deadline.
        self.clients.append(openai.AsyncOpenAI(api_key=self._api_key, base_url=settings.base_url,
                                               timeout=settings.timeout_s, max_retries=0, http_client=http))
        self.busy.append(0)
        self.peak.append(0)

    def _pick(self) -> int:
        """The least busy pool; a new one when every open pool is full and the bound allows more."""
        busy = self.busy
        least = min(range(len(busy)), key=busy.__getitem__)
        if busy[least] >= self.per_pool and len(busy) < self.max_pools:
            self._open_pool()
            return len(busy) - 1
        return least

    async def chat(self, body: dict[str, Any], *, timeout: float) -> Any:
        """``POST /chat/completions`` with ``body``; the decoded JSON answer (any JSON value).

        Raises the SDK's errors (``openai.APIStatusError`` subclasses for 4xx/5xx, ``APIConnectionError``,
        ``APITimeoutError``) and ``ValueError`` when the body is not JSON.
        """
        index = self._pick()
        self.busy[index] += 1
        self.peak[index] = max(self.peak[index], self.busy[index])
        try:
            response = await self.clients[index].post(
                "/chat/completions", body=body, cast_to=httpx2.Response, options={"timeout": timeout},
            )
        finally:
            self.busy[index] -= 1
        try:
            return response.json()
        except RecursionError:  # nested deeper than the JSON parser recurses: not a completion either
            raise ValueError("the answer's JSON is nested too deeply") from None

    async def list_models(self, *, timeout: float) -> None:
        """``GET /models`` (costs no tokens): the readiness probe. Raises the SDK's errors."""
        index = self._pick()  # a spare connection: it does not wait behind the calls in flight
        self.busy[index] += 1
        try:
            await self.clients[index].models.list(timeout=timeout)
        finally:
            self.busy[index] -= 1

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
