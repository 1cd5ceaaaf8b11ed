"""The daily LLM token budget per owner (``llm.daily_token_budget_per_user``), checked before a question
calls the LLM and charged with what each answer's attempts used.

The owner is the question's (``Question.client``: the end user, else the API key, else the X-Client-Id with
auth off); a question without one (eval) is never budgeted. Counts live in the store (``token_usage``), so a
budget holds across replicas and restarts. The check reads what committed answers charged: questions in flight
at the same moment may each pass it, so a budget can be overrun by the answers already running when it ran
out, never by a question asked after.

With the store unreachable the check lets questions through (``llm.token_budget_fail_open``, the default:
the LLM endpoint has limits of its own and a store outage should not stop answers) or refuses them with
``store_unavailable``. A charge that cannot be written is logged and lost, never the answer's failure.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from gateway import errors
from gateway.observability.logging import get_logger
from gateway.pipeline.respond import Attempt
from gateway.settings import LLMSettings
from gateway.store import Store, usage
from gateway.store.pool import store_faults

log = get_logger(__name__)

STORE_TIMEOUT_S = 2.0


async def check(store: Store | None, llm: LLMSettings, owner: str | None) -> None:
    """Raise ``token_budget_exceeded`` (429, Retry-After until midnight UTC) when ``owner`` (a question's
    ``client``) spent today's budget; ``store_unavailable`` or ``store_not_configured`` only when failing
    closed."""
    budget = llm.daily_token_budget_per_user
    if budget <= 0 or owner is None:
        return
    try:
        if store is None:
            raise errors.StoreNotConfigured("llm.daily_token_budget_per_user counts tokens in the store: set "
                                            "store.dsn")
        with store_faults("the question's token budget could not be checked; ask again later"):
            async with asyncio.timeout(STORE_TIMEOUT_S):
                spent = await usage.spent_today(store.pool, owner)
    except (errors.StoreUnavailable, errors.StoreNotConfigured, TimeoutError) as exc:
        if not llm.token_budget_fail_open:
            if isinstance(exc, TimeoutError):
                raise errors.StoreUnavailable("the question's token budget could not be checked in time; ask "
                                              "again later") from exc
            raise
        log.warning("token_budget_not_checked", error=repr(exc))
        return
    if spent >= budget:
        now = datetime.now(UTC)
        midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        wait = max(1, math.ceil((midnight - now).total_seconds()))
        error = errors.TokenBudgetExceeded(
            f"today's LLM token budget of {budget} is spent ({spent} used); it renews at midnight UTC "
            "(llm.daily_token_budget_per_user)",
            budget=budget, spent=spent, retry_after_s=wait,
        )
        error.retry_after = wait  # type: ignore[misc]  # the header counts down to the budget's renewal
        raise error


def tokens_of(attempts: Iterable[Attempt]) -> int:
    return sum(a.tokens.get("prompt", 0) + a.tokens.get("completion", 0) for a in attempts)


async def charge(store: Store | None, llm: LLMSettings, owner: str | None, attempts: Iterable[Attempt]) -> None:
    """Add the tokens ``attempts`` used to ``owner``'s count for today; best effort (see the docstring)."""
    if llm.daily_token_budget_per_user <= 0 or owner is None or store is None:
        return
    tokens = tokens_of(attempts)
    if tokens <= 0:
        return
    try:
        async with asyncio.timeout(STORE_TIMEOUT_S):
            await usage.add(store, owner, tokens)
    except Exception as exc:  # noqa: BLE001 - the answer is computed; losing its count is logged
        log.warning("token_usage_not_recorded", tokens=tokens, error=repr(exc))
