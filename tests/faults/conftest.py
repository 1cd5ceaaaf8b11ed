"""A scripted LLM for the whole session, reset around each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.testing.scripted_llm import ScriptedLLM


@pytest.fixture(scope="session")
def llm_server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def llm(llm_server: ScriptedLLM) -> Iterator[ScriptedLLM]:
    llm_server.reset()
    yield llm_server
    llm_server.reset()
