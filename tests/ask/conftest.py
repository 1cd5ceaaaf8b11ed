"""Fixtures for the /v1/ask tests: the scripted LLM server (one per session, reset per test) and folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import GUIDELINE_MARKER


@pytest.fixture(scope="session")
def llm_server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def llm(llm_server: ScriptedLLM) -> Iterator[ScriptedLLM]:
    llm_server.reset()
    yield llm_server
    llm_server.reset()


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    rules = tmp_path / "rules"
    guidelines = tmp_path / "guidelines"
    rules.mkdir()
    guidelines.mkdir()
    (guidelines / "default.md").write_text(
        f"1. {GUIDELINE_MARKER}: before answering, ask yourself whether every literal matches a stored value.\n"
    )
    return {"rules": rules, "guidelines": guidelines}


