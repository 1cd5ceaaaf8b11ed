"""Hidden names out of every text the gateway shows: one masking function, driven by a database's policy.

A Postgres message or hint can name a hidden column ("Perhaps you meant to reference the column
"employees.salary"") and a safety finding names what it refused; neither may reach a client, a log line
or a prompt. A hint sentence naming one is dropped whole: even masked, it confirms the guess was close.
Database errors are masked where they become gateway errors (``gateway.execute.run`` through
:meth:`gateway.execute.pool.Target.mask_error`, installed per database by :func:`install`), safety findings
where they become a refusal (``gateway.sql.client``, ``gateway.pipeline``); traces, SSE events and reflection
prompts are built from those, so they carry masked text too.

>>> names = hidden_names_of(frozenset({"employees.salary"}), frozenset())
>>> mask('column "salar" does not exist; Perhaps you meant to reference the column "employees.salary".', names)
'column "salar" does not exist; Perhaps you meant to reference the column "[hidden]".'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.errors import GatewayError
    from gateway.execute import Target
    from gateway.safety import Policy

MASK = "[hidden]"


def hidden_names_of(hidden_columns: Iterable[str], hidden_tables: Iterable[str]) -> list[str]:
    """Every spelling to mask: ``table.column``, the bare column and table names (longest first)."""
    names: set[str] = set()
    for entry in (*hidden_columns, *hidden_tables):
        parts = entry.lower().split(".")
        names.add(entry.lower())
        names.add(parts[-1])
        if len(parts) > 2:
            names.add(".".join(parts[-2:]))
    return sorted(names, key=len, reverse=True)


def mask(text: str, names: Sequence[str]) -> str:
    """Replace hidden names in prose, whole words, any case, quoted or not (``"employees"."salary"`` too)."""
    if not names or not text:
        return text
    # A qualified name may be written with quotes around each part: "employees"."salary".
    spelled = [r'"?\."?'.join(re.escape(p) for p in n.split(".")) if "." in n else re.escape(n) for n in names]
    pattern = re.compile(r"(?<![\w$])(?:" + "|".join(spelled) + r")(?![\w$])", re.IGNORECASE)
    return pattern.sub(MASK, text)


def mask_fields(value: Any, names: Sequence[str]) -> Any:
    """``value`` with every string inside (dicts, lists, tuples) masked."""
    if not names:
        return value
    if isinstance(value, str):
        return mask(value, names)
    if isinstance(value, dict):
        return {k: mask_fields(v, names) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(mask_fields(v, names) for v in value)
    return value


def drop_naming(hint: str | None, names: Sequence[str]) -> str | None:
    """A database hint without its sentences that name a hidden name (None when none is left): "Perhaps you
    meant [hidden]" would still tell a client that a hidden column is spelled close to its guess.

    >>> drop_naming('Perhaps you meant to reference the column "employees.salary".', ["employees.salary"])
    >>> drop_naming('Perhaps you meant to reference the column "e.name".', ["employees.salary"])
    'Perhaps you meant to reference the column "e.name".'
    """
    if not hint or not names:
        return hint
    kept = [s for s in re.split(r"(?<=[.!?])\s+", hint) if mask(s, names) == s]
    return " ".join(kept) or None


def mask_error(error: GatewayError, names: Sequence[str]) -> GatewayError:
    """``error`` with its detail and every string field masked (the same object, changed in place); the
    database's hint loses the sentences that name a hidden name (:func:`drop_naming`)."""
    if names:
        if isinstance(error.extra.get("hint"), str):
            error.extra["hint"] = drop_naming(error.extra["hint"], names)
        error.detail = mask(error.detail, names)
        error.args = (error.detail,)
        error.extra = mask_fields(error.extra, names)
    return error


def install(targets: Mapping[str, Target], policy_of: Callable[[str], Policy]) -> None:
    """Mask each target's database errors with the hidden names of its live policy (rules reload included):
    ``policy_of`` is asked at each error, so a reloaded rule file applies at once."""
    for name, target in targets.items():
        def names(name: str = name) -> list[str]:
            policy = policy_of(name)
            return hidden_names_of(policy.hidden_columns, policy.hidden_tables)

        target.hidden_names = names
