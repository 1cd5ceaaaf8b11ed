"""Fixtures for the evaluation harness tests: a scripted LLM over real HTTP that answers by question text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.eval.helpers import GUIDELINE_MARKER


@pytest.fixture
def guidelines_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "guidelines"
    folder.mkdir()
    (folder / "default.md").write_text(
        f"1. {GUIDELINE_MARKER}: before answering, ask yourself whether every literal matches a stored value.\n"
    )
    return folder
