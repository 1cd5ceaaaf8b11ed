"""Helpers for the evaluation tests: settings for the real demo database, and a script keyed by question.

The scripted LLM tells generation from reflection by the system prompt the gateway sends, and a question
from another by its text (the longest question text found in the prompt wins, so that one question being
a prefix of another cannot confuse it). Scripts hold no state, so any number of scenarios can ask the same
question in any order, concurrently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gateway.pipeline import prompts
from gateway.settings import DatabaseSettings, Limits, LLMSettings, Settings, StoreSettings
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM

GUIDELINE_MARKER = "EVAL-GUIDELINE-5C1D"


def sql(text: str) -> str:
    return f"<thinking>looked at the schema</thinking>\n<sql>{text}</sql>"


def answer_by_question(llm: ScriptedLLM, script: dict[str, tuple[str, str | None]]) -> None:
    """``script[question] = (generation SQL, reflection SQL or None to repeat the generation SQL)``."""
    ordered = sorted(script, key=len, reverse=True)

    def rule(request: LLMRequest) -> str | None:
        question = next((q for q in ordered if q in request.text), None)
        if question is None:
            return None
        generated, reflected = script[question]
        if request.system == prompts.GENERATE_SYSTEM:
            return sql(generated)
        if request.system == prompts.REFLECT_SYSTEM:
            return sql(reflected if reflected is not None else generated)
        return None

    llm.add(rule)


def is_reflection(request: LLMRequest) -> bool:
    return request.system == prompts.REFLECT_SYSTEM


def is_generation(request: LLMRequest) -> bool:
    return request.system == prompts.GENERATE_SYSTEM


def eval_settings(demo_dsn: str, base_url: str, guidelines_dir: Path, *, store_dsn: str | None = None,
                  rules_dir: Path | None = None) -> Settings:
    return Settings(
        databases={"demo": DatabaseSettings(dsn=demo_dsn, limits=Limits(statement_timeout_ms=5000, max_rows=500))},
        llm=LLMSettings(base_url=base_url, model="scripted-model", timeout_s=10.0, max_retries=0),
        store=StoreSettings(dsn=store_dsn),
        guidelines_dir=guidelines_dir,
        rules_dir=rules_dir or guidelines_dir / "no-rules",
    )


def write_questions(path: Path, questions: Iterable[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return path
