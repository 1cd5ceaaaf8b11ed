"""Configuration errors a person can act on: where (file or environment variable), which key, what was
expected, and the closest known key when a name is misspelt. Never a framework dump or link."""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

NOT_ECHOED = frozenset({"password", "api_key", "secret", "token", "dsn"})  # may carry credentials


def describe(exc: ValidationError, root: type[BaseModel], file: Path | None, file_data: dict[str, Any]) -> str:
    """One line per problem, e.g. ``nl2sql-gateway.toml: databases.sales.dns: unknown key; did you mean 'dsn'?``"""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        if error["type"] == "missing" and _has_near_miss(loc, root, file_data):
            continue  # "dns" for "dsn": the unknown-key line says it better than "dsn is missing"
        lines.append(f"{_where(loc, error['type'], file, file_data)}: {'.'.join(loc)}: {_what(error, loc, root)}")
    count = f"{len(lines)} problems" if len(lines) > 1 else "1 problem"
    return f"{count} in the settings:\n  " + "\n  ".join(lines)


def _what(error: Any, loc: list[str], root: type[BaseModel]) -> str:
    if error["type"] == "extra_forbidden":
        known = known_keys(root, loc[:-1])
        guess = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6)
        if guess:
            return f"unknown key; did you mean {guess[0]!r}?"
        return f"unknown key; known keys here: {', '.join(sorted(known)) or 'none'}"
    if error["type"] == "missing":
        return "required but not set"
    message = str(error["msg"]).removeprefix("Value error, ")
    if loc and loc[-1].lower() not in NOT_ECHOED and not isinstance(error.get("input"), dict | list):
        message += f" (got {error['input']!r})"
    return message


def _where(loc: list[str], kind: str, file: Path | None, file_data: dict[str, Any]) -> str:
    probe = loc[:-1] if kind == "missing" else loc
    if file is not None and _in(file_data, probe):
        return str(file)
    variable = "NL2SQL_" + "__".join(loc).upper()
    if variable in {name.upper() for name in os.environ}:
        return f"environment variable {variable}"
    return "settings"


def _in(data: Any, loc: Sequence[str]) -> bool:
    for part in loc:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _has_near_miss(loc: list[str], root: type[BaseModel], file_data: dict[str, Any]) -> bool:
    """A required key is missing while a misspelling of it sits beside it in the file."""
    parent: Any = file_data
    for part in loc[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if not isinstance(parent, dict):
        return False
    unknown = [key for key in parent if key not in known_keys(root, loc[:-1])]
    return bool(difflib.get_close_matches(loc[-1], unknown, n=1, cutoff=0.6))


def known_keys(root: type[BaseModel], loc: Sequence[str]) -> list[str]:
    """The keys the settings model accepts at ``loc`` (names of dict entries, such as databases, skipped).

    >>> from gateway.settings import Settings
    >>> "dsn" in known_keys(Settings, ["databases", "sales"])
    True
    """
    annotation: Any = root
    for part in loc:
        model = _model(annotation)
        if model is not None:
            field = model.model_fields.get(part)
            if field is None:
                return []
            annotation = field.annotation
        elif typing.get_origin(annotation) is dict:
            annotation = typing.get_args(annotation)[1]
        else:
            return []
    model = _model(annotation)
    return list(model.model_fields) if model is not None else []


def _model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return None
