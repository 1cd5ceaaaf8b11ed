"""Fixtures for the /v1/ask tests: the scripted LLM server (one per session, reset per test) and folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ask.helpers import GUIDELINE_MARKER


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


