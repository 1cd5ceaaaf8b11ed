"""Load the SQL case files under ``cases/`` (format described in ``cases/README.md``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gateway.safety import Policy

CASES = Path(__file__).parent / "cases"


@dataclass(frozen=True)
class Case:
    id: str
    sql: str
    expect: tuple[str, ...]  # empty: allowed
    policy: Policy | None


def load(kind: str) -> list[Case]:
    out: list[Case] = []
    for path in sorted((CASES / kind).glob("*.sql")):
        name, header, lines = None, {}, []  # type: ignore[var-annotated]
        default_policy: str | None = None  # '-- policy-default: {...}' before the first case

        def flush() -> None:
            if name is None:
                return
            expect = tuple(c.strip() for c in header.get("expect", "allowed").split(",") if c.strip())
            raw = header.get("policy", default_policy)
            policy = Policy(**json.loads(raw)) if raw is not None else None
            out.append(Case(f"{path.stem}: {name}", "\n".join(lines).rstrip(),
                            () if expect == ("allowed",) else expect, policy))

        in_header = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if name is None and line.startswith("-- policy-default:"):
                default_policy = line.split(":", 1)[1].strip()
                continue
            if line.startswith("-- case:"):
                flush()
                name, header, lines, in_header = line[8:].strip(), {}, [], True
                continue
            key = line[3:].split(":", 1)[0] if line.startswith("-- ") else ""
            if in_header and key in ("expect", "policy"):
                header[key] = line.split(":", 1)[1].strip()
                continue
            in_header = False
            lines.append(line)
        flush()
    return out
