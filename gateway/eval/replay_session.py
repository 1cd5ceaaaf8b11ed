"""``nl2sql-gateway eval replay``: the verified set under the configuration in force and under a change.

The change is any mix of a stored guideline version (``--guideline vN``), another model (``--model``) and
another rules folder (``--rules-dir``); the report (:mod:`gateway.magic.replay`) is printed, written as JSON
with ``--out``, and stored in the feedback store (with the guideline version, when one is replayed), so the
console's Regressions view shows it. The exit status is 1 when a verified question regressed, for CI.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from gateway import errors
from gateway.context.model import Guideline
from gateway.eval import pipeline
from gateway.magic.replay import (
    Variant,
    combine,
    guideline_variant,
    render_report,
    rules_variant,
    settings_variant,
)
from gateway.settings import Settings

__all__ = ["REGRESSED", "replay_session"]

REGRESSED = 1


async def replay_session(settings: Settings, *, databases: Sequence[str], guideline: str | None = None,
                         model: str | None = None, rules_dir: Path | None = None, limit: int = 200,
                         concurrency: int = 2, out: TextIO | None = None, json_path: Path | None = None) -> int:
    """Replay and report; 0 without regressions, 1 with some, 2 when it cannot start."""
    out = out or sys.stdout
    try:
        if not settings.store.dsn:
            raise pipeline.EvalSetupError("this needs the feedback store: set store.dsn (NL2SQL_STORE__DSN)")
        async with pipeline.open_gateway(settings) as gateway:
            known = sorted(gateway.settings.databases)
            scope = list(databases) or known
            for database in scope:
                if database not in gateway.settings.databases:
                    raise errors.UnknownDatabase(f"no database named {database!r} (known: "
                                                 f"{', '.join(known) or 'none configured'})", database=database)
            changes: list[Variant] = []
            version: int | None = None
            if guideline is not None:
                version = int(guideline.lower().removeprefix("v"))
                try:
                    stored = await gateway.guideline(version)
                except errors.UnknownGuidelineVersion:
                    raise pipeline.EvalSetupError(f"the store has no guideline version {version}") from None
                changes.append(guideline_variant(f"guideline v{version}", Guideline(f"v{version}", stored.text)))
            if model is not None:
                changes.append(settings_variant(f"model {model}", lambda s: s.model_copy(
                    update={"ask": s.ask.model_copy(update={"model": model})})))
            if rules_dir is not None:
                changes.append(rules_variant(f"rules {rules_dir}", rules_dir))
            if not changes:
                raise pipeline.EvalSetupError("nothing to replay: give --guideline, --model or --rules-dir")
            items = await gateway.verified_items(scope, limit=limit)
            if not items:
                raise pipeline.EvalSetupError(f"no approved verified example on {', '.join(scope)}")
            if await gateway.llm_problem(probe=False):
                raise pipeline.EvalSetupError("no LLM endpoint configured: set llm.base_url and llm.model")
            after = combine(" + ".join(c.label for c in changes), changes)
            report = (await gateway.replay_verified(items, after, concurrency=concurrency)).as_dict()
            report_id = await gateway.record_regression_report(
                report, subject=after.label, actor="cli", guideline_version=version,
                database=scope[0] if len(scope) == 1 else None)
    except pipeline.EvalSetupError as exc:
        print(f"cannot start: {exc}", file=sys.stderr)
        return 2
    except errors.GatewayError as exc:
        print(f"cannot start: {exc.code}: {exc.detail}", file=sys.stderr)
        return 2
    out.write(render_report(report))
    out.write(f"report {report_id} stored\n")
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return REGRESSED if report["regressions"] else 0
