"""Where guidelines and examples come from: protocols, with defaults that need no store.

With a feedback store the gateway opens with implementations of both backed by its tables
(gateway.magic.wiring.store_sources); the context stage only knows these two methods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from gateway.context.model import Example, Guideline
from gateway.observability.logging import get_logger

log = get_logger(__name__)

DEFAULT_GUIDELINE_FILE = "default.md"


@runtime_checkable
class GuidelineSource(Protocol):
    async def active(self, database: str) -> Guideline:
        """The guideline in force for ``database``."""
        ...


@runtime_checkable
class ExamplesSource(Protocol):
    async def similar(self, database: str, question: str, k: int) -> list[Example]:
        """Up to ``k`` verified examples that resemble ``question``, most similar first."""
        ...

    async def exact(self, database: str, question: str) -> Example | None:
        """A verified example for the very same question (case, spacing and final punctuation ignored), or
        None. With ``store.exact_match_answers`` the ask loop may answer with its SQL without the LLM."""
        ...


class FileGuidelineSource:
    """``<guidelines_dir>/<database>.md`` when it exists, else ``default.md``; re-read when the file changes."""

    def __init__(self, guidelines_dir: Path) -> None:
        self.guidelines_dir = Path(guidelines_dir)
        self._cache: dict[Path, tuple[int, Guideline]] = {}

    async def active(self, database: str) -> Guideline:
        own = self.guidelines_dir / f"{database}.md"
        path = own if own.is_file() else self.guidelines_dir / DEFAULT_GUIDELINE_FILE
        version = "default" if path.name == DEFAULT_GUIDELINE_FILE else f"file:{path.name}"
        try:
            mtime = path.stat().st_mtime_ns
            cached = self._cache.get(path)
            if cached and cached[0] == mtime:
                return cached[1]
            guideline = Guideline(version, path.read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError) as exc:
            # Answering without a guideline beats failing the question; the log says why.
            log.warning("guideline_unreadable", database=database, path=str(path), error=str(exc))
            return Guideline("none", "")
        self._cache[path] = (mtime, guideline)
        return guideline


class NoExamples:
    """The default examples source: none (the feedback store provides verified ones)."""

    async def similar(self, database: str, question: str, k: int) -> list[Example]:
        return []

    async def exact(self, database: str, question: str) -> Example | None:
        return None
