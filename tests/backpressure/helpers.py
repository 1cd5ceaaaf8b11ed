"""An app on the real demo database with auth off (loopback) and a scripted LLM over real HTTP, with the
backpressure settings a test asks for; shared by the backpressure and fault tests."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.settings import (
    AuthSettings,
    BackpressureSettings,
    DatabaseSettings,
    Limits,
    LLMSettings,
    ServerSettings,
    Settings,
    StoreSettings,
)
from tests.serving import in_process as running  # noqa: F401 - the tests import it from here

QUESTION = "How many orders are there?"
ANSWER = "<sql>SELECT count(*) AS orders FROM orders</sql>"
# Allowed by the safety check and the cost gate yet runs for minutes: two billion rows behind a bound only the
# data knows (the static bounds cannot fold it, the planner expects 1000 rows), so only a timeout ends it.
ENDLESS_SQL = "SELECT count(*) FROM generate_series(1, (SELECT max(order_id) FROM orders) * 100000) a(x)"


def build_settings(demo_dsn: str, llm_url: str | None = None, *, limits: dict[str, Any] | None = None,
                   llm: dict[str, Any] | None = None, server: dict[str, Any] | None = None,
                   backpressure: dict[str, Any] | None = None, store_dsn: str | None = None,
                   auth: bool = False, pool_max_size: int = 4, tmp: Any = None) -> Settings:
    extra: dict[str, Any] = {}
    if tmp is not None:
        extra = {"rules_dir": tmp / "rules", "guidelines_dir": tmp / "guidelines"}
    return Settings(
        databases={"demo": DatabaseSettings(dsn=demo_dsn, pool_min_size=1, pool_max_size=pool_max_size,
                                            limits=Limits(**{"statement_timeout_ms": 5000, **(limits or {})}))},
        llm=LLMSettings(base_url=llm_url, model="scripted-model" if llm_url else None,
                        **{"timeout_s": 10.0, "max_retries": 1, **(llm or {})}),
        server=ServerSettings(**(server or {})),
        backpressure=BackpressureSettings(**(backpressure or {})),
        store=StoreSettings(dsn=store_dsn, **({"command_timeout_s": 5.0} if store_dsn else {})),
        auth=AuthSettings(enabled=auth, cache_ttl_s=0),
        **extra,
    )


async def ask(http: httpx.AsyncClient, question: str = QUESTION, **headers: str) -> httpx.Response:
    return await http.post("/v1/ask", json={"question": question, "database": "demo"}, headers=headers)


def codes(responses: list[httpx.Response]) -> list[str]:
    return sorted(r.json().get("code", "ok") if r.status_code != 200 else "ok" for r in responses)
