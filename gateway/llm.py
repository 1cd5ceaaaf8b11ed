"""LLM access: one ``openai.AsyncOpenAI`` client against any OpenAI-compatible endpoint.

Every call names its *purpose* (generate, reflect, judge, magic_*), which labels the metrics
``nl2sql_llm_calls_total``, ``nl2sql_llm_seconds`` and ``nl2sql_llm_tokens_total``.

The SDK's own retries are switched off: this module retries 429, 5xx, connection errors and timeouts
itself, with exponential backoff, so that the whole call, retries included, ends before the request's
deadline (the caller's and the HTTP request's, whichever comes first: see :mod:`gateway.deadline`). A
semaphore bounds the calls in flight (``llm.max_concurrency``); waiting for it counts against the deadline
too, and at most ``llm.max_queued`` calls wait (more answer ``overloaded`` at once). A circuit breaker
(:mod:`gateway.breaker`) stops calling an endpoint that failed ``llm.breaker_failures`` calls in a row.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import openai

from gateway import deadline as request_deadline
from gateway import errors
from gateway.backpressure import WaitBound
from gateway.breaker import Breaker
from gateway.llm_pool import LLMPools
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.settings import LLMSettings

log = get_logger(__name__)

BACKOFF_BASE_S = 0.25
BACKOFF_MAX_S = 4.0
MIN_CALL_S = 0.05  # below this much time left, a call cannot succeed: give up instead of trying


@dataclass(frozen=True, slots=True)
class LLMReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    llm_ms: float  # wall time of the call, retries and semaphore wait included
    model: str


class LLMClient:
    """Chat completions with bounded concurrency, bounded retries and metrics by purpose."""

    def __init__(self, settings: LLMSettings, pools: LLMPools) -> None:
        self.settings = settings
        self.pools = pools
        self._slots = WaitBound(settings.max_concurrency, settings.max_queued, "llm", "llm.max_queued")
        self.breaker = Breaker(settings.breaker_failures, settings.breaker_open_s)

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        model: str,
        temperature: float | None = None,
        deadline: float | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> LLMReply:
        """One completion; ``deadline`` is a ``time.monotonic()`` instant the call must end by.

        Raises :class:`errors.LLMUnavailable` (endpoint down, 5xx, 429 or timeouts after the retries),
        :class:`errors.DeadlineExceeded` (the request's time budget ran out first) or
        :class:`errors.LLMBadOutput` (a 200 answer without a message); :class:`errors.Overloaded` when
        ``llm.max_queued`` calls already wait for a slot. ``response_format``: structured output (a JSON
        schema), passed on as the openai SDK's ``response_format``.
        """
        started = time.monotonic()
        temperature = self.settings.temperature if temperature is None else temperature
        deadline = request_deadline.earliest(deadline)
        attempt = 0
        outcome = "breaker_open"
        try:
            self.breaker.allow()
        except errors.LLMUnavailable:
            metrics.LLM_CALLS.labels(purpose, outcome).inc()
            raise
        outcome = "error"
        try:
            while True:
                try:
                    timeout = self._timeout(deadline)
                except errors.DeadlineExceeded:
                    outcome = "deadline"
                    raise
                in_flight = False  # a timeout while waiting for a slot says nothing about the endpoint
                try:
                    async with asyncio.timeout(timeout):
                        async with self._slots.slot():
                            in_flight = True
                            body: dict[str, Any] = {"model": model, "messages": messages,
                                                    "temperature": temperature}
                            if response_format is not None:
                                body["response_format"] = response_format
                            response = await self.pools.chat(body, timeout=timeout)
                    reply = _reply(response, model, started)
                    outcome = "ok"
                    metrics.LLM_TOKENS.labels(purpose, "prompt").inc(reply.prompt_tokens)
                    metrics.LLM_TOKENS.labels(purpose, "completion").inc(reply.completion_tokens)
                    return reply
                except (openai.APITimeoutError, TimeoutError, openai.APIConnectionError,
                        openai.RateLimitError, openai.InternalServerError) as exc:
                    outcome = _outcome(exc) if in_flight or not isinstance(exc, TimeoutError) else "deadline"
                    attempt += 1
                    pause = _backoff(attempt, exc)
                    if attempt > self.settings.max_retries or not _time_left(deadline, pause + MIN_CALL_S) \
                            or self.breaker.is_open:  # other calls found the endpoint down meanwhile
                        error = _give_up(exc, attempt, cut_short=timeout < self.settings.timeout_s)
                        if isinstance(error, errors.DeadlineExceeded):
                            # An endpoint that accepted the call and never answered within the budget is
                            # failing, deadline or not: counted, so a hung endpoint opens the breaker.
                            outcome = "deadline_in_flight" if in_flight else "deadline"
                        raise error from exc
                    log.info("llm_retry", purpose=purpose, attempt=attempt, error=type(exc).__name__,
                             pause_s=round(pause, 3))
                    await asyncio.sleep(pause)
                except openai.APIStatusError as exc:  # 4xx other than 429: retrying will not help
                    outcome = "rejected"
                    raise errors.LLMUnavailable(
                        f"the LLM endpoint refused the call ({exc.status_code}): {_short(exc)}",
                        llm_status=exc.status_code,
                    ) from exc
                except (openai.APIResponseValidationError, ValueError) as exc:  # ValueError: body not JSON
                    outcome = "bad_output"
                    raise errors.LLMBadOutput(f"the LLM endpoint's answer is not a completion: {_short(exc)}") from exc
                except errors.LLMBadOutput:
                    outcome = "bad_output"
                    raise
                except errors.Overloaded:
                    outcome = "overloaded"
                    raise
        except asyncio.CancelledError:  # the caller gave up (a client that left, a candidate outvoted)
            outcome = "cancelled"
            raise
        finally:
            self._settle_breaker(outcome)
            metrics.LLM_CALLS.labels(purpose, "deadline" if outcome == "deadline_in_flight" else outcome).inc()
            metrics.LLM_SECONDS.labels(purpose).observe(time.monotonic() - started)

    def _settle_breaker(self, outcome: str) -> None:
        if outcome == "ok":
            self.breaker.succeeded()
        elif outcome in {"timeout", "deadline_in_flight", "rate_limited", "unreachable", "server_error", "rejected",
                         "bad_output"}:
            self.breaker.failed()
        else:  # a deadline spent before the call, backpressure, a cancelled request: nothing learnt
            self.breaker.release()

    def _timeout(self, deadline: float | None) -> float:
        if deadline is None:
            return self.settings.timeout_s
        left = deadline - time.monotonic()
        if left < MIN_CALL_S:
            raise errors.DeadlineExceeded("the question's time budget was spent before the LLM could answer")
        return min(self.settings.timeout_s, left)

    async def unreachable(self, timeout_s: float = 10.0) -> str | None:
        """Why the endpoint cannot be used (no answer, key refused), or None. Asks ``GET /models``, which
        costs no tokens; a server without that route still counts as reachable."""
        try:
            await self.pools.list_models(timeout=timeout_s)
        except openai.AuthenticationError as exc:
            return f"the LLM endpoint refused the API key: {_short(exc)}"
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            return f"the LLM endpoint {self.pools.base_url} does not answer: {_short(exc)}"
        except openai.APIError:
            pass  # 404 and the like: the endpoint is there, it just has no model listing
        return None

    async def close(self) -> None:
        await self.pools.close()


def _reply(response: Any, model: str, started: float) -> LLMReply:
    """The reply from a chat completion's decoded JSON; any other JSON is :class:`errors.LLMBadOutput`."""
    choices = response.get("choices") if isinstance(response, dict) else None
    if not choices or not isinstance(choices, list):
        raise errors.LLMBadOutput("the LLM endpoint answered without any choice")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise errors.LLMBadOutput("the LLM endpoint answered without message content")
    usage = response.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    return LLMReply(
        text=text,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        llm_ms=(time.monotonic() - started) * 1000,
        model=str(response.get("model") or model),
    )


def _count(value: Any) -> int:
    """A token count as the endpoint reported it; 0 when it reported none or something else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 2**53:
        return 0  # NaN fails the comparison too
    return int(value)


def _give_up(exc: Exception, attempts: int, *, cut_short: bool) -> errors.GatewayError:
    """The error after the last try: the budget's fault when the deadline shortened a call that timed out."""
    if cut_short and isinstance(exc, (openai.APITimeoutError, TimeoutError)):
        return errors.DeadlineExceeded(
            "the LLM did not answer within the question's time budget (ask.time_budget_s)", attempts=attempts
        )
    return errors.LLMUnavailable(
        f"the LLM endpoint failed {attempts} time(s), last with {type(exc).__name__}: "
        + (_short(exc) or "no answer within llm.timeout_s"),
        attempts=attempts,
    )


def _outcome(exc: Exception) -> str:
    if isinstance(exc, (openai.APITimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limited"
    if isinstance(exc, openai.APIConnectionError):
        return "unreachable"
    return "server_error"


def _backoff(attempt: int, exc: Exception) -> float:
    """Exponential backoff with full jitter; a server's Retry-After (seconds) is honoured up to the cap."""
    pause = random.uniform(0, min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** (attempt - 1)))
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    if header and header.replace(".", "", 1).isdigit():
        pause = max(pause, min(float(header), BACKOFF_MAX_S))
    return pause


def _time_left(deadline: float | None, needed: float) -> bool:
    return deadline is None or deadline - time.monotonic() > needed


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:297] + "..."


def is_configured(settings: LLMSettings) -> bool:
    """An endpoint is known: a base URL (OpenAI-compatible server) or an API key (OpenAI itself)."""
    return bool(settings.base_url or settings.api_key)


@asynccontextmanager
async def open_llm(settings: LLMSettings) -> AsyncIterator[LLMClient | None]:
    """The Gateway's LLM client, or None when no endpoint is configured (``/v1/ask`` then answers
    ``llm_not_configured``; the SQL endpoints do not need an LLM)."""
    if not is_configured(settings):
        yield None
        return
    key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"  # local servers need none
    # The connections follow the semaphore (gateway.llm_pool): every admitted call gets one at once, and
    # the connections of a burst stay open for the next one.
    llm = LLMClient(settings, LLMPools(settings, key))
    try:
        yield llm
    finally:
        await llm.close()
