"""Each database's last good rule set, kept on disk so that a fresh process starts from it.

A running gateway keeps the last good rules in memory when a file breaks (:mod:`gateway.rules.registry`);
that memory dies with the process. A worker respawned by ``serve --workers``, a restarted container or a
second replica on the same volume would start from the broken file instead. So every good load that came
from files is written here (``<state_dir>/<database>.json``: the whole set, hidden names, instructions,
limits, required conditions, result checks, and which files held rules), and a process that cannot load
a database's files, or finds a file gone that held rules, serves this set rather than nothing or no rules.

Writes are atomic (a temporary file, fsync, rename, fsync of the folder): a reader sees the old record or
the new one, never half of one, whichever worker or replica wrote it. The record holds hidden names, so the
file is created readable by its owner only.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gateway.rules.model import RequiredCondition, ResultCheck, RuleLimitsSet, RuleSet
from gateway.rules.row_filters import parse_row_filter

FORMAT = 1


class Unreadable(Exception):
    """A record exists but cannot be used (not JSON, another format, a field missing): history unknown."""


def default_state_dir(rules_dir: Path) -> Path:
    """``.rules.last-good`` beside ``rules/``: outside the rules folder, so that it outlives that folder
    being deleted or swapped, and next to it, so that every worker and replica using those files finds it."""
    rules_dir = Path(rules_dir)
    return rules_dir.parent / f".{rules_dir.name or 'rules'}.last-good"


def record_path(state_dir: Path, database: str) -> Path:
    return Path(state_dir) / f"{database}.json"


def save(state_dir: Path, database: str, ruleset: RuleSet, files: list[str]) -> None:
    """Write ``ruleset`` as ``database``'s last good set; ``files``: the rule files (relative to the rules
    folder) that held rules in that load. Raises OSError when it cannot be written."""
    record = {"format": FORMAT, "database": database, "files": sorted(files), "rules": _encode(ruleset)}
    data = json.dumps(record, sort_keys=True, indent=1).encode()
    path = record_path(state_dir, database)
    try:
        if path.read_bytes() == data:
            return  # every worker saves what it loaded: the same set need not be written again
    except OSError:
        pass
    write_atomically(path, data)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old content or the new, never half (a
    temporary file, fsync, rename, fsync of the folder); the folder is created owner-only. The semantic
    layer keeps its last good models the same way (gateway.semantic.registry)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(path.parent)


def load(state_dir: Path, database: str) -> tuple[RuleSet, list[str]] | None:
    """``database``'s saved set and the files that held rules; None when none was saved.

    Raises :class:`Unreadable` when a record is there but cannot be used."""
    path = record_path(state_dir, database)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc}") from exc
    try:
        record = json.loads(raw)
        if record.get("format") != FORMAT or record.get("database") != database:
            raise ValueError(f"format {record.get('format')!r} for {record.get('database')!r}")
        return _decode(database, record["rules"]), [str(f) for f in record["files"]]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise Unreadable(f"{path} is not a last-good record this gateway can use: {exc}") from exc


def forget(state_dir: Path, database: str) -> bool:
    """Remove ``database``'s record (its rules were declared gone); True when there was one."""
    try:
        record_path(state_dir, database).unlink()
    except FileNotFoundError:
        return False
    _sync_folder(Path(state_dir))
    return True


def _encode(rules: RuleSet) -> dict[str, Any]:
    return {
        "sources": [str(p) for p in rules.sources],
        "table_descriptions": rules.table_descriptions,
        "column_descriptions": rules.column_descriptions,
        "instructions": list(rules.instructions),
        "hidden_tables": sorted(rules.hidden_tables),
        "hidden_columns": sorted(rules.hidden_columns),
        "shown_tables": sorted(rules.shown_tables),
        "shown_columns": sorted(rules.shown_columns),
        "unfiltered_tables": sorted(rules.unfiltered_tables),
        "extra_functions": sorted(rules.extra_functions),
        "limits": asdict(rules.limits),
        "required_conditions": [asdict(c) for c in rules.required_conditions],
        "result_checks": [asdict(c) for c in rules.result_checks],
        "row_filters": {table: {"sql": f.sql, "file": f.file, "line": f.line}
                        for table, f in rules.row_filters.items()},
    }


def _decode(database: str, data: dict[str, Any]) -> RuleSet:
    def names(key: str) -> frozenset[str]:
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{key} must be a list of names")
        return frozenset(value)

    return RuleSet(
        database=database,
        sources=tuple(Path(p) for p in data["sources"]),
        table_descriptions={str(k): str(v) for k, v in data["table_descriptions"].items()},
        column_descriptions={str(k): str(v) for k, v in data["column_descriptions"].items()},
        instructions=[str(i) for i in data["instructions"]],
        hidden_tables=names("hidden_tables"),
        hidden_columns=names("hidden_columns"),
        shown_tables=names("shown_tables"),
        shown_columns=names("shown_columns"),
        unfiltered_tables=frozenset(data.get("unfiltered_tables", [])),
        extra_functions=names("extra_functions"),
        limits=RuleLimitsSet(**data["limits"]),
        required_conditions=[RequiredCondition(**c) for c in data["required_conditions"]],
        result_checks=[ResultCheck(**c) for c in data["result_checks"]],
        # A saved set from before row filters existed has none; a filter that no longer parses raises, and an
        # unreadable saved set serves nothing.
        row_filters={str(table): parse_row_filter(str(table), str(f["sql"]), str(f["file"]), int(f["line"]))
                     for table, f in data.get("row_filters", {}).items()},
    )


def _sync_folder(folder: Path) -> None:
    """fsync the folder so that the rename itself survives a crash (where the platform allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
