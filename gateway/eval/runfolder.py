"""A run folder: what an evaluation run asked for and every result it finished, safe against crashes.

Layout of ``<runs_dir>/<run_id>/``:

* ``manifest.json``: the question file and its digest, scenarios, model, settings that shape answers;
* ``results.jsonl``: one line per finished (scenario, question), appended and fsync'd as each finishes, so a
  crash or Ctrl-C loses nothing that finished; running again with the same run id skips those;
* ``corrections.jsonl``: which failures ``--collect-corrections`` already stored (so a re-run adds none twice);
* ``report/``: ``report.json``, ``report.md`` and the PNG charts.

A crash in the middle of a write can leave a partial last line: it is cut off when the folder is opened.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["RunFolder", "RunFolderError", "new_run_id"]

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
CORRECTIONS = "corrections.jsonl"
REPORT_DIR = "report"


class RunFolderError(ValueError):
    """A run folder that is missing, unreadable or belongs to a different question set."""


def new_run_id(now: datetime | None = None) -> str:
    """A sortable id such as ``20250114-093012``."""
    return (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")


@dataclass
class RunFolder:
    path: Path
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def report_dir(self) -> Path:
        return self.path / REPORT_DIR

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def create_or_resume(cls, path: Path, manifest: dict[str, Any]) -> tuple[RunFolder, bool]:
        """Open ``path`` for ``manifest``'s run; True when it resumes an earlier run of the same questions."""
        folder = cls(Path(path))
        existing = folder.path / MANIFEST
        if existing.is_file():
            old = folder.manifest()
            if old.get("questions_digest") != manifest.get("questions_digest"):
                raise RunFolderError(
                    f"run {folder.run_id} was started with a different question set "
                    f"({old.get('questions_file')}); use another --run-id"
                )
            # New scenarios may be added to a run; keep the union, in first-seen order.
            scenarios = list(dict.fromkeys([*old.get("scenarios", []), *manifest.get("scenarios", [])]))
            folder._write_manifest({**old, **manifest, "scenarios": scenarios, "created_at": old.get("created_at"),
                                    "resumed_at": _now()})
            folder._repair_tail(folder.path / RESULTS)
            return folder, True
        folder.path.mkdir(parents=True, exist_ok=True)
        folder._write_manifest({**manifest, "run_id": folder.run_id, "created_at": _now()})
        return folder, False

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        folder = cls(Path(path))
        if not (folder.path / MANIFEST).is_file():
            raise RunFolderError(f"{path} is not an evaluation run folder (no {MANIFEST})")
        return folder

    def manifest(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunFolderError(f"cannot read {self.path / MANIFEST}: {exc}") from exc
        if not isinstance(data, dict):
            raise RunFolderError(f"{self.path / MANIFEST} is not a JSON object")
        return data

    def _write_manifest(self, data: dict[str, Any]) -> None:
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / MANIFEST)

    # -- results -------------------------------------------------------------------------------------
    def results(self) -> list[dict[str, Any]]:
        """Every finished result; for a (scenario, question) recorded twice, the last one wins."""
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for record in _read_jsonl(self.path / RESULTS):
            latest[(record["scenario"], record["id"])] = record
        return list(latest.values())

    def finished(self) -> set[tuple[str, str]]:
        return {(r["scenario"], r["id"]) for r in self.results()}

    def append_result(self, record: dict[str, Any]) -> None:
        """Append one finished result durably before returning (flush and fsync)."""
        _append_durably(self.path / RESULTS, record, self._lock)

    # -- corrections bookkeeping ---------------------------------------------------------------------
    def collected(self) -> set[tuple[str, str]]:
        return {(r["scenario"], r["id"]) for r in _read_jsonl(self.path / CORRECTIONS)}

    def record_collected(self, record: dict[str, Any]) -> None:
        _append_durably(self.path / CORRECTIONS, record, self._lock)

    @staticmethod
    def _repair_tail(path: Path) -> None:
        """Cut a partial last line left by a crash mid-write, so the next append starts a fresh line."""
        if not path.is_file():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with path.open("r+b") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())


def _append_durably(path: Path, record: dict[str, Any], lock: threading.Lock) -> None:
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    with lock, path.open("a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a partial line from a crash mid-write: that result did not finish
        if isinstance(record, dict):
            records.append(record)
    return records


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
