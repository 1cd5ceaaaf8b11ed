"""ruff and mypy run with the tests, so CI enforces them (style.md: both run in CI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff() -> None:
    result = run("ruff", "check", "gateway", "bench", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy() -> None:
    # --strict as in pyproject's [tool.mypy] (strict = true), repeated here so a config edit cannot loosen it
    result = run("mypy", "--strict", "gateway", "--cache-dir", str(ROOT / ".mypy_cache"))
    assert result.returncode == 0, result.stdout + result.stderr
