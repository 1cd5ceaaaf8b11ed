"""Semantic models per database, reloaded when their files change, failing closed like the rules.

The files are found, watched and read with the rules' own machinery (:class:`~gateway.rules.watch.Watch`
for change events, the rules registry's consistent reads and signatures): an edit is seen by the next
request, without a restart. A load that fails (invalid YAML, an unknown key, a metric pointing at nothing,
a file cut short to nothing) keeps the last good model in force, logged as ``semantic_reload_failed``; a
file that held a model and is gone keeps it too (write ``{}`` first to drop it on purpose). With no good
model ever loaded and broken files, the database's semantic features are refused with
:class:`~gateway.errors.SemanticUnavailable` rather than answered from a half-read model; a database with
no semantic files simply has an empty model. With a ``state_dir`` every good load is also saved
(``<state_dir>/<database>.json``, written atomically as the rules' last good sets are), so a fresh process
(a respawned worker, a restarted replica) whose files are broken starts from it instead of refusing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gateway import errors
from gateway.observability.logging import get_logger
from gateway.rules.last_good import write_atomically
from gateway.rules.registry import _read_consistently, _signature
from gateway.rules.watch import Watch
from gateway.semantic.loading import SemanticProblem, broken_entries, load_model, model_files
from gateway.semantic.model import SemanticModel

log = get_logger(__name__)

EMPTY = SemanticModel()


@dataclass(frozen=True, slots=True)
class SemanticStatus:
    """``ok``, ``last_good`` (the files do not load; the last good model is served) or ``unavailable``."""

    state: str = "ok"
    problems: tuple[str, ...] = ()


class SemanticRegistry:
    """The semantic model of each database, read from ``semantic_dir``."""

    def __init__(self, semantic_dir: Path, state_dir: Path | None = None) -> None:
        self.semantic_dir = Path(semantic_dir)
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self._watch = Watch(self.semantic_dir)
        self._checked: dict[str, int] = {}
        self._signatures: dict[str, object] = {}
        self._models: dict[str, SemanticModel] = {}
        self._held: dict[str, set[Path]] = {}
        self._status: dict[str, SemanticStatus] = {}

    def get(self, database: str) -> SemanticModel:
        """The model in force (empty when the database has no semantic files); raises
        :class:`~gateway.errors.SemanticUnavailable` when the files are broken and no good model was loaded."""
        self._current(database)
        status = self._status.get(database, SemanticStatus())
        if status.state == "unavailable":
            raise errors.SemanticUnavailable(
                f"the semantic model of {database!r} cannot be read and no earlier good model was loaded: "
                + "; ".join(status.problems[:3]), database=database)
        return self._models.get(database, EMPTY)

    def status(self, database: str) -> SemanticStatus:
        self._current(database)
        return self._status.get(database, SemanticStatus())

    def close(self) -> None:
        self._watch.close()

    def _saved(self, database: str) -> SemanticModel | None:
        """The model saved by the last good load of any process; None when there is none (or it is unusable)."""
        if self.state_dir is None:
            return None
        try:
            record = json.loads((self.state_dir / f"{database}.json").read_bytes())
            if record.get("format") != 1 or record.get("database") != database:
                raise ValueError("another format or database")
            return SemanticModel.model_validate(record["model"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("semantic_last_good_unreadable", database=database, error=str(exc))
            return None

    def _current(self, database: str) -> None:
        generation = self._watch.generation()
        if self._checked.get(database) == generation:
            return
        files = model_files(self.semantic_dir, database)
        broken = broken_entries(self.semantic_dir, database)
        signature = (_signature(files), tuple(p.file for p in broken))
        if self._signatures.get(database) != signature:
            self._signatures[database] = signature
            self._reload(database, files, broken)
        self._checked[database] = generation

    def _reload(self, database: str, files: list[Path], broken: list[SemanticProblem]) -> None:
        texts, problems = _read_consistently(files)
        problems = broken + problems
        model = EMPTY
        if texts is not None:
            model, found = load_model([f for f in files if f in texts], texts)
            # An empty file is what a truncated write looks like: an error here, as for the rules.
            problems += [SemanticProblem(p.file, p.line, p.message, "error") if p.line == 0 and
                         "empty" in p.message else p for p in found]
        gone = sorted(str(p) for p in self._held.get(database, set()) - set(files))
        problems += [SemanticProblem(name, 0, "this file held a semantic model and is gone; the last good model "
                                     "stays in force (make it hold `{}` first to drop it)") for name in gone]
        failed = [str(p) for p in problems if p.severity == "error"]
        if texts is None or failed:
            if database not in self._models:
                saved = self._saved(database)
                if saved is not None:
                    self._models[database] = saved
            kept = database in self._models
            self._status[database] = SemanticStatus("last_good" if kept else "unavailable",
                                                    tuple(failed or ["the files kept changing while read"]))
            log.error("semantic_reload_failed", database=database, problems=failed,
                      serving="last_good" if kept else "nothing")
            return
        self._models[database] = model
        self._held[database] = {p for p in files if (texts.get(p) or "").strip() not in ("", "{}")}
        self._status[database] = SemanticStatus()
        if self.state_dir is not None and files:
            data = json.dumps({"format": 1, "database": database, "model": model.model_dump(mode="json")},
                              sort_keys=True).encode()
            try:
                write_atomically(self.state_dir / f"{database}.json", data)
            except OSError as exc:
                log.error("semantic_last_good_not_saved", database=database, error=str(exc))
        log.info("semantic_loaded", database=database, files=[str(f) for f in files],
                 entities=len(model.entities), metrics=len(model.metrics))
