"""Helpers for the /v1/ask tests: POST /v1/ask on the real demo database, with a scripted OpenAI-compatible LLM over real HTTP.

``script(llm, generation, *reflections)`` answers the generation prompt once and then each reflection
prompt in turn; prompts are told apart by their system message, exactly as the gateway sends them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from gateway.pipeline import prompts
from gateway.settings import AskPolicy, DatabaseSettings, Limits, LLMSettings, Settings
from gateway.testing.scripted_llm import LLMRequest, Reply, ScriptedLLM
from tests.serving import in_process as gateway  # noqa: F401 - the tests import it from here

GUIDELINE_MARKER = "REMINDER-7F3A"


# The app serves on loopback only here: no API keys (when the gateway has access control at all).
LOCAL_ONLY: dict[str, Any] = {"auth": {"enabled": False}} if "auth" in Settings.model_fields else {}


def is_generation(request: LLMRequest) -> bool:
    return request.system == prompts.GENERATE_SYSTEM


def is_reflection(request: LLMRequest) -> bool:
    return request.system == prompts.REFLECT_SYSTEM


def is_judge(request: LLMRequest) -> bool:
    return request.system == prompts.JUDGE_SYSTEM


def script(llm: ScriptedLLM, generation: str | Reply, *reflections: str | Reply) -> None:
    llm.add(lambda r: generation if is_generation(r) else None, times=1)
    for reply in reflections:
        llm.add(lambda r, reply=reply: reply if is_reflection(r) else None, times=1)


def sql(text: str) -> str:
    return f"<thinking>checked the schema</thinking>\n<sql>{text}</sql>"


def ask_settings(demo_dsn: str, dirs: dict[str, Path], base_url: str | None, *, llm: dict[str, Any] | None = None,
                 **ask: Any) -> Settings:
    llm_settings = LLMSettings(base_url=base_url, model="scripted-model" if base_url else None,
                               **{"timeout_s": 5.0, "max_retries": 1, **(llm or {})})
    return Settings(
        databases={"demo": DatabaseSettings(dsn=demo_dsn, ask=AskPolicy(**ask),
                                            limits=Limits(statement_timeout_ms=3000, max_rows=200))},
        llm=llm_settings,
        rules_dir=dirs["rules"],
        guidelines_dir=dirs["guidelines"],
        **LOCAL_ONLY,
    )


async def post_ask(http: httpx.AsyncClient, question: str, **extra: Any) -> httpx.Response:
    return await http.post("/v1/ask", json={"question": question, "database": "demo", **extra})
