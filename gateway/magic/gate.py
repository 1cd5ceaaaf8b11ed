"""The activation gate: a candidate guideline must not be worse than the one in force on held-out cases.

Replay method (documented choice): a *reflection-only replay*. For each held-out correction (MAGIC never
saw it; see ``magic.holdout_every``) the LLM gets the question, schema and the known-wrong SQL plus the
guideline under test, and returns one revision, which is checked, run and compared with the corrected SQL by
execution equivalence. This is the paper's first scenario (self-correction of SQL known to be wrong), costs
one LLM call per case and guideline, and isolates the guideline's effect from generation noise; a replay
through the whole ask pipeline would cost a generation and up to ``max_iterations`` reflections per case.

The candidate passes when ``examples >= gate_min_examples`` and its accuracy is at least the baseline's
minus ``gate_threshold``. The baseline is what the ask loop uses now: the active stored version, or the
file guideline when none is active.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from gateway.context.sources import GuidelineSource
from gateway.magic.agents import Agents, extract_sql
from gateway.magic.cases import CaseBuilder
from gateway.magic.cycle import equivalent, execute_checked
from gateway.settings import MagicSettings
from gateway.state import GatewayState
from gateway.store import Store, corrections

METHOD = "reflection_replay"


async def evaluate(
    state: GatewayState, store: Store, agents: Agents, baseline: GuidelineSource, candidate_text: str,
    settings: MagicSettings,
) -> dict[str, Any]:
    """Replay the held-out corrections with the candidate and the baseline; the evaluation to store."""
    held_out = await corrections.holdout(store.pool, limit=settings.gate_max_examples)
    builder = CaseBuilder(state)
    slots = asyncio.Semaphore(settings.concurrency)
    baseline_versions: set[str] = set()

    async def replay_one(correction: corrections.StoredCorrection) -> dict[str, Any] | None:
        async with slots:
            built = await builder.build(correction)
            if isinstance(built, str):
                return None
            case, gold = built
            base = await baseline.active(case.database)
            baseline_versions.add(base.version)
            outcome: dict[str, Any] = {"correction_id": case.correction_id}
            for name, text in (("candidate", candidate_text), ("baseline", base.text)):
                sql = extract_sql(await agents.replay(text, case))
                ok = False
                if sql is not None:
                    executed = await execute_checked(state, case.database, sql)
                    ok = executed.result is not None and equivalent(gold, case.correct_sql, executed.result)
                outcome[name] = ok
            return outcome

    items = [i for i in await asyncio.gather(*(replay_one(c) for c in held_out)) if i is not None]
    n = len(items)
    candidate_correct = sum(1 for i in items if i["candidate"])
    baseline_correct = sum(1 for i in items if i["baseline"])
    candidate_accuracy = candidate_correct / n if n else None
    baseline_accuracy = baseline_correct / n if n else None
    if n < settings.gate_min_examples:
        passed, reason = False, f"{n} held-out correction(s); the gate needs {settings.gate_min_examples}"
    elif n == 0:
        passed, reason = True, "no held-out corrections and magic.gate_min_examples = 0"
    else:
        assert candidate_accuracy is not None and baseline_accuracy is not None
        passed = candidate_accuracy >= baseline_accuracy - settings.gate_threshold
        reason = (f"candidate {candidate_correct}/{n} vs baseline {baseline_correct}/{n}, "
                  f"threshold {settings.gate_threshold}")
    return {
        "method": METHOD,
        "examples": n,
        "candidate_correct": candidate_correct,
        "baseline_correct": baseline_correct,
        "candidate_accuracy": candidate_accuracy,
        "baseline_accuracy": baseline_accuracy,
        "baseline_versions": sorted(baseline_versions),
        "threshold": settings.gate_threshold,
        "passed": passed,
        "reason": reason,
        "items": items,
        "evaluated_at": datetime.now(UTC).isoformat(),
    }
