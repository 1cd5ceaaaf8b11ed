"""Rules edited from the console: hidden columns, instructions and limits, written to a file of their own,
``rules/<database>/console.yaml``, merged with the DBA's hand-written files like any other (gateway.rules.
loading). The hand-written files are never rewritten, so their comments and layout stay as written.

An edit replaces that file whole. It is validated as ``rules check`` would, against the live schema and
together with the other files (a limit already set in another file, an unknown column, a broken merge are
refused as ``rules_invalid`` with the problems), then written atomically (a temporary file renamed over
the old one); a folder the gateway may not write answers ``rules_read_only``. A column the console hid
before and an edit leaves out is written as ``hidden: false``: a hidden name otherwise stays hidden while
the gateway runs (docs/hidden-data.md), and one hidden by another file stays hidden anyway.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gateway import errors
from gateway.execute.introspect import Schema
from gateway.rules.check import check_rules
from gateway.rules.loading import RuleProblem, parse_file, rule_files

CONSOLE_FILE = "console.yaml"
HEADER = ("# Written by the console (PUT /v1/databases/{name}/rules/console): hidden columns, instructions and\n"
          "# limits edited there. Merged with the other rule files of this database; edit here or there.\n")
LIMIT_KEYS = ("max_rows", "max_joins", "max_subquery_depth")


@dataclass
class RulesEdit:
    """What the console's file says: ``table.column`` names to hide, instructions, limits."""

    hidden_columns: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    limits: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"hidden_columns": list(self.hidden_columns), "instructions": list(self.instructions),
                "limits": dict(self.limits)}


def console_file(rules_dir: Path, database: str) -> Path:
    return Path(rules_dir) / database / CONSOLE_FILE


def current(rules_dir: Path, database: str) -> RulesEdit:
    """The console file's content now (empty when there is none or it cannot be read as rules)."""
    path = console_file(rules_dir, database)
    if not path.is_file():
        return RulesEdit()
    parsed, _ = parse_file(path)
    if parsed is None:
        return RulesEdit()
    m = parsed.model
    hidden = sorted(f"{t}.{c}" for t, rule in m.tables.items() for c, cr in rule.columns.items() if cr.hidden)
    limits = {k: v for k in LIMIT_KEYS if (v := getattr(m.limits, k)) is not None}
    return RulesEdit(hidden, [i.strip() for i in m.instructions], limits)


def render(edit: RulesEdit, before: RulesEdit) -> str:
    """The console file's YAML for ``edit``; columns ``before`` hid and ``edit`` leaves out get ``hidden: false``."""
    tables: dict[str, dict[str, Any]] = {}

    def column(name: str, hidden: bool) -> None:
        table, _, col = name.partition(".")
        tables.setdefault(table, {"columns": {}})["columns"][col] = {"hidden": hidden}

    keep = {n.lower() for n in edit.hidden_columns}
    for name in sorted(keep):
        column(name, True)
    for name in sorted({n.lower() for n in before.hidden_columns} - keep):
        column(name, False)
    data: dict[str, Any] = {}
    if tables:
        data["tables"] = tables
    if edit.instructions:
        data["instructions"] = list(edit.instructions)
    if edit.limits:
        data["limits"] = dict(edit.limits)
    return HEADER + (yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110) if data else "{}\n")


def shape_problems(edit: RulesEdit) -> list[str]:
    """What makes an edit unusable before any file is read: names not ``table.column``, blank instructions,
    unknown or non-positive limits."""
    out = [f"hidden column {n!r} is not table.column" for n in edit.hidden_columns
           if n.count(".") != 1 or not all(part.strip() for part in n.split("."))]
    out += [f"instruction {i + 1} is empty" for i, text in enumerate(edit.instructions) if not text.strip()]
    out += [f"unknown limit {k!r} (one of {', '.join(LIMIT_KEYS)})" for k in edit.limits if k not in LIMIT_KEYS]
    out += [f"limits.{k} must be a positive integer" for k, v in edit.limits.items()
            if k in LIMIT_KEYS and (not isinstance(v, int) or isinstance(v, bool) or v < 1)]
    return out


def validate(rules_dir: Path, database: str, text: str, schema: Schema) -> list[RuleProblem]:
    """The errors ``rules check`` would report for ``database`` with ``text`` as its console file, checked
    on a copy of its rule files (nothing is written to the rules folder)."""
    rules_dir = Path(rules_dir)
    with tempfile.TemporaryDirectory(prefix="nl2sql-rules-") as scratch:
        copy = Path(scratch)
        target = console_file(copy, database)
        target.parent.mkdir(parents=True, exist_ok=True)
        for path in rule_files(rules_dir, database):
            if path == console_file(rules_dir, database):
                continue
            relative = path.relative_to(rules_dir)
            (copy / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy / relative)
        target.write_text(text, encoding="utf-8")
        found = check_rules(copy, {database: schema})
    out = []
    for p in found:
        if p.severity != "error":
            continue
        try:  # name the file as it will be, not the scratch copy
            shown = str(rules_dir / Path(p.file).relative_to(copy))
        except ValueError:
            shown = p.file
        out.append(RuleProblem(shown, p.line, p.message, p.severity))
    return out


READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}


def write(rules_dir: Path, database: str, text: str) -> Path:
    """Write the console file atomically; ``rules_read_only`` when the folder cannot be written."""
    path = console_file(rules_dir, database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".console-", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o644)  # as a DBA's editor would leave it (mkstemp makes it private to the gateway)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        if exc.errno in READ_ONLY:
            raise errors.RulesReadOnly(
                f"the rules folder {str(Path(rules_dir))!r} cannot be written ({exc.strerror}); edit the rule files "
                "where they are kept (a ConfigMap, a repository) or make the folder writable for the gateway",
                folder=str(rules_dir)) from None
        raise
    return path
