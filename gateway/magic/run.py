"""One regeneration run: corrections in, at most one candidate guideline version out.

1. Only the replica holding the store's regeneration advisory lock runs; the others report ``locked``.
2. Each pending correction is either held out for the gate (``magic.holdout_every``), found unusable, or
   put through the feedback-correction cycle; its outcome and any successful feedback are committed at once,
   so a run that dies keeps the work done so far and the next run continues.
3. Kept feedbacks that were not used yet are cut into batches of ``magic.batch_size``; each full batch
   updates the guideline (the first one ever writes it from scratch, later ones start from the active
   version). A partial batch waits for the next run. A run for one database (``database=``) takes only
   that database's corrections and feedbacks, starts from the guideline that database uses now and writes a
   candidate of that database; a run without one writes a global candidate from every database's.
4. The candidate, its provenance and the feedbacks it used are written in one transaction; then the gate
   evaluates it and, when it passes and ``auto_activate`` is on, one more transaction activates it. Nothing
   touches the active version before that last transaction.
5. A candidate whose provenance includes unreviewed corrections (``provenance.unreviewed_corrections``:
   no dba or admin stood behind them, see ``gateway.store.corrections``) is never activated by a run, even
   with ``auto_activate`` or ``activate=True``: the run ends ``pending_review`` and the candidate waits for a
   DBA to activate it (``guideline activate`` / ``POST /v1/guidelines/{version}/activate``). Reflection
   corrections count as unreviewed until a DBA approves the example they led to: their SQL is the
   gateway's own, but their question is a client's text and their confirmation a client's verdict.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from gateway import errors
from gateway.context.sources import GuidelineSource
from gateway.llm import LLMClient
from gateway.magic import gate
from gateway.magic.agents import Agents
from gateway.magic.batch import batches, looks_like_guideline
from gateway.magic.cases import CaseBuilder
from gateway.magic.cycle import run_cycle
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.settings import MagicSettings
from gateway.state import GatewayState
from gateway.store import Store, corrections, guidelines, runs
from gateway.store.corrections import StoredCorrection

log = get_logger(__name__)


@dataclass
class Magic:
    """What a run needs: the gateway (targets, policies), the store, the LLM and the baseline guideline."""

    state: GatewayState
    store: Store
    llm: LLMClient
    settings: MagicSettings
    model: str
    baseline: GuidelineSource


@dataclass
class RunReport:
    outcome: str
    run_id: int | None = None
    database: str | None = None  # the scope: None for a global run
    version: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    llm_calls_by_purpose: dict[str, int] = field(default_factory=dict)
    evaluation: dict[str, Any] | None = None
    error: str | None = None
    wall_s: float = 0.0
    exception: BaseException | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "run_id": self.run_id, "database": self.database, "version": self.version,
                "counts": self.counts,
                "llm_calls_by_purpose": self.llm_calls_by_purpose, "evaluation": self.evaluation,
                "error": self.error, "wall_s": round(self.wall_s, 3)}


async def regenerate(magic: Magic, trigger: str = "manual", *, activate: bool | None = None,
                     database: str | None = None) -> RunReport:
    """Run MAGIC once if no other replica is running it; never raises for a failed run (see ``outcome``).

    With ``database`` only that database's corrections are used and the candidate is that database's
    version (it starts from the guideline the database uses now); without, every database's corrections
    make a global candidate."""
    started = time.monotonic()
    async with magic.store.session() as lock_conn:
        if not await runs.try_lock(lock_conn):
            metrics.REGENERATION_RUNS.labels("locked").inc()
            return RunReport("locked", database=database, wall_s=time.monotonic() - started)
        try:
            report = await _run_locked(magic, trigger, magic.settings.auto_activate if activate is None else activate,
                                       database)
        finally:
            await runs.unlock(lock_conn)
    report.wall_s = time.monotonic() - started
    metrics.REGENERATION_RUNS.labels(report.outcome).inc()
    await refresh_gauges(magic.store, magic.settings)
    log.info("regeneration_finished", **{k: v for k, v in report.as_dict().items() if k != "evaluation"})
    return report


async def _run_locked(magic: Magic, trigger: str, activate: bool, database: str | None) -> RunReport:
    store, settings = magic.store, magic.settings
    run_id = await runs.start(store.pool, trigger, database)
    agents = Agents(magic.llm, magic.model)
    counts: dict[str, int] = {"corrections_processed": 0, "feedbacks_kept": 0, "guideline_updates": 0}
    report = RunReport("running", run_id=run_id, database=database, counts=counts)
    try:
        pending = await corrections.pending(store.pool, verified_only=settings.verified_only,
                                            limit=settings.max_corrections_per_run, database=database)
        await _process(magic, agents, run_id, pending, counts)
        kept = await runs.unused_feedbacks(store.pool, database)
        full = batches(kept, settings.batch_size)
        if not full:
            report.outcome = "no_change"
            return report
        # A database's candidate improves on what that database uses now (its own version or the global one).
        active = await (guidelines.in_force(store.pool, database) if database else guidelines.active(store.pool))
        text = active.text if active else ""
        for batch in full:
            text = await agents.write_guideline(text, batch)
            if not looks_like_guideline(text):
                raise errors.LLMBadOutput("the guideline writer's answer has no numbered reminders")
            counts["guideline_updates"] += 1
        used = [k for batch in full for k in batch]
        provenance = {"corrections": [k.correction_id for k in used], "feedbacks": [k.id for k in used],
                      "run_id": run_id, "trigger": trigger, "batches": len(full), "batch_size": settings.batch_size,
                      "model": magic.model, "database": database}
        unreviewed = await corrections.unreviewed(store.pool, [k.correction_id for k in used])
        provenance["unreviewed_corrections"] = unreviewed
        async with store.transaction() as conn:
            version = await guidelines.add_candidate(conn, text=text, parent=active.version if active else None,
                                                     provenance=provenance, database=database)
            await runs.mark_used(conn, [k.id for k in used], version)
        report.version, report.outcome = version, "candidate"
        if activate and unreviewed:
            # What clients taught becomes the guideline every prompt carries only through a DBA.
            log.info("guideline_waits_for_review", version=version, unreviewed=len(unreviewed))
            report.outcome = "pending_review"
        elif activate:
            evaluation = await gate.evaluate(magic.state, store, agents, text, settings, database=database,
                                             learnt_from=[k.correction_id for k in used])
            await gate.keep_report(store, evaluation, version, database, f"regeneration run {run_id}")
            await guidelines.set_evaluation(store.pool, version, evaluation)
            report.evaluation = evaluation
            if evaluation["passed"]:
                await guidelines.activate(store.pool, version, actor=f"regeneration run {run_id}",
                                          detail={"gate": evaluation["method"], "forced": False})
                report.outcome = "activated"
            else:
                report.outcome = "rejected"
        return report
    except Exception as exc:  # noqa: BLE001 - a failed run is reported and recorded, the server goes on
        log.warning("regeneration_failed", run_id=run_id, error=repr(exc))
        report.outcome, report.error, report.exception = "failed", f"{type(exc).__name__}: {exc}", exc
        return report
    finally:
        counts["llm_calls"] = agents.calls
        report.llm_calls_by_purpose = dict(agents.by_purpose)
        await runs.finish(store.pool, run_id, outcome=report.outcome, counts=counts, version=report.version,
                          error=report.error)


async def _process(magic: Magic, agents: Agents, run_id: int, pending: list[StoredCorrection],
                   counts: dict[str, int]) -> None:
    """Work through the pending corrections, a few at a time; the first failure cancels the rest."""
    builder = CaseBuilder(magic.state)
    slots = asyncio.Semaphore(magic.settings.concurrency)
    every = magic.settings.holdout_every

    async def one(correction: StoredCorrection) -> None:
        async with slots:
            if every and correction.id % every == 0:
                await corrections.mark_processed(magic.store.pool, correction.id, "holdout")
                return
            built = await builder.build(correction)
            if isinstance(built, str):
                log.info("correction_unusable", correction_id=correction.id, reason=built)
                await corrections.mark_processed(magic.store.pool, correction.id, "unusable")
                return
            case, gold = built
            result = await run_cycle(magic.state, agents, case, gold, magic.settings.max_iterations)
            async with magic.store.transaction() as conn:
                if result.outcome == "success":
                    await runs.keep_feedback(conn, correction_id=correction.id, run_id=run_id,
                                             feedback=result.feedback, revised_sql=result.revised_sql,
                                             iterations=result.iterations)
                    counts["feedbacks_kept"] += 1
                await corrections.mark_processed(conn, correction.id, result.outcome)
            counts["corrections_processed"] += 1

    try:
        async with asyncio.TaskGroup() as group:
            for correction in pending:
                group.create_task(one(correction))
    except ExceptionGroup as group_error:
        raise group_error.exceptions[0] from None  # report the cause, not the group


async def refresh_gauges(store: Store, settings: MagicSettings) -> None:
    """Corrections pending and the active version, for the metrics scrape."""
    try:
        pending = await corrections.count_pending(store.pool, verified_only=settings.verified_only)
        metrics.CORRECTIONS_PENDING.set(pending)
        active = await guidelines.active(store.pool)
        metrics.GUIDELINE_ACTIVE_VERSION.set(active.version if active else 0)
    except Exception as exc:  # noqa: BLE001 - gauges are best effort
        log.info("magic_gauges_not_refreshed", error=repr(exc))
