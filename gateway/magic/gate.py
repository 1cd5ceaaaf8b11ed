"""The activation gate: a candidate guideline must not be worse than the one in force on held-out cases.

Two replay methods, chosen by how much held-out material the candidate's scope has:

- ``question_replay`` (whole questions): when the scope has at least ``magic.gate_question_min_examples``
  approved verified examples that the candidate did not learn from (``examples.held_out``), each question
  is asked through the real pipeline (generation, check, execution, validation and reflection, under the
  database's own ask policy) twice, once with the candidate injected as the guideline and once with the
  guideline in force, and each final answer is compared with the example's SQL by execution equivalence.
  This measures what users get (it includes answers the guideline breaks), at the cost of a generation and
  up to ``max_iterations`` reflections per question and guideline. The replays write no audit rows and no
  corrections, and leave the answer-ratio gauges alone; the example being replayed is hidden from the
  few-shot examples and exact answers, or it would answer itself.
- ``reflection_replay`` (fewer examples): for each held-out correction (``magic.holdout_every``; MAGIC never
  saw it) the LLM gets the question, schema and the known-wrong SQL plus the guideline under test and returns
  one revision, which is checked, run and compared with the corrected SQL. This is the paper's first
  scenario (self-correction of SQL known to be wrong) and costs one LLM call per case and guideline. The
  evaluation's ``note`` says why this method was used.

Either way the candidate passes when ``examples >= gate_min_examples`` and its accuracy is at least the
baseline's minus ``gate_threshold``. The baseline is what the candidate would replace: for a database's
candidate the guideline that database uses now (its version, the global one, or the file); for a global
candidate the global version or, when none is active, the file.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gateway.context.model import Guideline
from gateway.context.sources import GuidelineSource
from gateway.learning.corrections import MemoryCorrections
from gateway.magic.agents import Agents, extract_sql
from gateway.magic.cases import CaseBuilder
from gateway.magic.cycle import equivalent, execute_checked
from gateway.magic.replay import RegressionReport, WithoutQuestion, guideline_variant, replay
from gateway.magic.verified import load_verified
from gateway.pipeline import Question, ask
from gateway.pipeline.ports import Asking
from gateway.pipeline.tally import Tally
from gateway.settings import MagicSettings
from gateway.state import GatewayState
from gateway.store import Store, corrections, examples, regressions
from gateway.store.examples import StoredExample
from gateway.store.sources import StoreGuidelines

REFLECTION_REPLAY = "reflection_replay"
QUESTION_REPLAY = "question_replay"
METHOD = REFLECTION_REPLAY  # kept for callers of the single-method gate


class FixedGuideline:
    """A guideline source that answers one guideline whatever the database (the one under test)."""

    def __init__(self, guideline: Guideline) -> None:
        self.guideline = guideline

    async def active(self, database: str) -> Guideline:
        return self.guideline


class GlobalBaseline:
    """What a database without a version of its own uses: the global version, else the files."""

    def __init__(self, source: StoreGuidelines) -> None:
        self.source = source

    async def active(self, database: str) -> Guideline:
        return await self.source.global_active(database)


def baseline_for(state: Asking, database: str | None) -> GuidelineSource:
    """The guideline a candidate of scope ``database`` (None: global) would replace."""
    if database is None and isinstance(state.guidelines, StoreGuidelines):
        return GlobalBaseline(state.guidelines)
    return state.guidelines


def _whole(state: Asking) -> GatewayState:
    """Replays answer under views of the running state (another guideline, examples, targets or rules,
    gateway.magic.replay): those are copies of the state itself, not of a narrower view."""
    if not isinstance(state, GatewayState):
        raise TypeError(f"replaying needs the gateway's state, not {type(state).__name__}")
    return state


async def evaluate(
    state: Asking, store: Store, agents: Agents, candidate_text: str, settings: MagicSettings, *,
    database: str | None = None, learnt_from: list[int] | None = None,
) -> dict[str, Any]:
    """Replay held-out material with the candidate (of scope ``database``, None: global) and the baseline;
    the evaluation to store with the version. ``learnt_from``: the corrections the candidate was built from.

    With ``magic.replay_regressions`` the verified set of the scope (less what the candidate learnt from) is
    replayed first
    (:func:`gateway.magic.replay.replay`): the evaluation then carries ``regressed`` (questions right with the
    baseline and wrong with the candidate; any fails it) and ``regression_report`` (the whole report, for
    the caller to store and drop). The accuracy gate reads the same answers for the held-out examples."""
    baseline = baseline_for(state, database)
    scope = [database] if database is not None else sorted(state.targets.by_name)
    held_out = await examples.held_out(store.pool, scope, learnt_from=learnt_from or [],
                                       limit=settings.gate_max_examples)
    needed = settings.gate_question_min_examples
    report: RegressionReport | None = None
    if settings.replay_regressions:
        verified = await load_verified(store.pool, scope, limit=settings.gate_max_examples,
                                       learnt_from=learnt_from or [])
        if verified:
            report = await replay(_whole(state), verified, guideline_variant("in force", baseline),
                                  guideline_variant("candidate", Guideline("candidate", candidate_text)),
                                  concurrency=settings.concurrency)
    if held_out and len(held_out) >= needed:
        if report is not None and {str(e.id) for e in held_out} <= {i["id"] for i in report.items
                                                                    if i["source"] == "example"}:
            items, versions = await _from_report(report, held_out, baseline)
        else:
            items, versions = await _replay_questions(state, held_out, candidate_text, baseline, settings)
        method, note = QUESTION_REPLAY, f"{len(held_out)} held-out verified example(s); whole questions replayed"
    else:
        items, versions = await _replay_reflections(state, store, agents, candidate_text, baseline, settings,
                                                    database)
        method = REFLECTION_REPLAY
        note = (f"{len(held_out)} held-out verified example(s), whole-question replay needs "
                f"{needed} (magic.gate_question_min_examples); replayed one reflection per held-out correction")
    evaluation = _verdict(method, note, items, versions, settings, database)
    evaluation["gate_passed"] = evaluation["passed"]
    if report is not None:
        regressed = report.summary()
        evaluation["regressed"] = len(regressed)
        evaluation["regressions"] = regressed
        evaluation["regression_report"] = report.as_dict()
        if regressed and evaluation["passed"]:
            evaluation["passed"] = False
            evaluation["reason"] = (f"{len(regressed)} verified question(s) answered right with the guideline in "
                                    "force are answered wrong with the candidate")
    return evaluation


async def _from_report(report: RegressionReport, held_out: list[StoredExample], baseline: GuidelineSource,
                       ) -> tuple[list[dict[str, Any]], set[str]]:
    """The accuracy gate's items read off the regression replay's answers (the held-out examples only; a
    reference that is blocked or no longer runs grades nothing, as in :func:`_replay_questions`)."""
    ids = {str(e.id) for e in held_out}
    items, versions = [], set()
    for i in report.items:
        # templates are replayed for regressions only: the guideline does not answer them, a grade would be free
        if i["source"] != "example" or i["id"] not in ids or i["suspect"] in ("reference_blocked", "reference_failed"):
            continue
        versions.add((await baseline.active(i["database"])).version)
        items.append({"example_id": int(i["id"]), "database": i["database"], "question": i["question"],
                      "candidate": i["after"]["right"], "candidate_status": i["after"]["status"],
                      "candidate_attempts": i["after"]["llm_calls"], "candidate_reason": i["after"]["reason"],
                      "baseline": i["before"]["right"], "baseline_status": i["before"]["status"],
                      "baseline_attempts": i["before"]["llm_calls"], "baseline_reason": i["before"]["reason"]})
    return items, versions


def _verdict(method: str, note: str, items: list[dict[str, Any]], versions: set[str], settings: MagicSettings,
             database: str | None) -> dict[str, Any]:
    n = len(items)
    candidate_correct = sum(1 for i in items if i["candidate"])
    baseline_correct = sum(1 for i in items if i["baseline"])
    candidate_accuracy = candidate_correct / n if n else None
    baseline_accuracy = baseline_correct / n if n else None
    unit = "verified example(s)" if method == QUESTION_REPLAY else "held-out correction(s)"
    if n < settings.gate_min_examples:
        passed, reason = False, f"{n} {unit}; the gate needs {settings.gate_min_examples}"
    elif n == 0:
        passed, reason = True, f"no {unit} and magic.gate_min_examples = 0"
    else:
        assert candidate_accuracy is not None and baseline_accuracy is not None
        passed = candidate_accuracy >= baseline_accuracy - settings.gate_threshold
        reason = (f"candidate {candidate_correct}/{n} vs baseline {baseline_correct}/{n}, "
                  f"threshold {settings.gate_threshold}")
    return {
        "method": method,
        "note": note,
        "database": database,
        "examples": n,
        "candidate_correct": candidate_correct,
        "baseline_correct": baseline_correct,
        "candidate_accuracy": candidate_accuracy,
        "baseline_accuracy": baseline_accuracy,
        "baseline_versions": sorted(versions),
        "threshold": settings.gate_threshold,
        "passed": passed,
        "reason": reason,
        "items": items,
        "evaluated_at": datetime.now(UTC).isoformat(),
    }


async def _replay_questions(state: Asking, held_out: list[StoredExample], candidate_text: str,
                            baseline: GuidelineSource, settings: MagicSettings,
                            ) -> tuple[list[dict[str, Any]], set[str]]:
    slots = asyncio.Semaphore(settings.concurrency)
    versions: set[str] = set()
    candidate = Guideline("candidate", candidate_text)
    tally = Tally()  # the replays' answers must not move the serving ratios

    async def one(example: StoredExample) -> dict[str, Any] | None:
        async with slots:
            gold = await execute_checked(state, example.database, example.sql)
            if gold.result is None:
                return None  # the example's SQL no longer runs (rules or schema changed): nothing to grade
            base = await baseline.active(example.database)
            versions.add(base.version)
            item: dict[str, Any] = {"example_id": example.id, "database": example.database,
                                    "question": example.question}
            for name, guideline in (("candidate", candidate), ("baseline", base)):
                view = replace(_whole(state), guidelines=FixedGuideline(guideline), tally=tally,
                               examples=WithoutQuestion(state.examples, example.question),
                               corrections=MemoryCorrections(size=1))
                limits = view.target(example.database).settings.limits
                answer = await ask(view, Question(example.database, example.question, max_rows=limits.max_rows))
                result = answer.chosen.result if answer.chosen else None
                item[name] = (answer.status in ("ok", "suspicious") and result is not None
                              and equivalent(gold.result, example.sql, result))
                item[f"{name}_status"] = answer.status
                item[f"{name}_attempts"] = len(answer.attempts)
            return item

    found = await asyncio.gather(*(one(e) for e in held_out))
    return [i for i in found if i is not None], versions


async def _replay_reflections(state: Asking, store: Store, agents: Agents, candidate_text: str,
                              baseline: GuidelineSource, settings: MagicSettings, database: str | None,
                              ) -> tuple[list[dict[str, Any]], set[str]]:
    held_out = await corrections.holdout(store.pool, limit=settings.gate_max_examples, database=database)
    builder = CaseBuilder(state)
    slots = asyncio.Semaphore(settings.concurrency)
    versions: set[str] = set()

    async def one(correction: corrections.StoredCorrection) -> dict[str, Any] | None:
        async with slots:
            built = await builder.build(correction)
            if isinstance(built, str):
                return None
            case, gold = built
            base = await baseline.active(case.database)
            versions.add(base.version)
            outcome: dict[str, Any] = {"correction_id": case.correction_id}
            for name, text in (("candidate", candidate_text), ("baseline", base.text)):
                sql = extract_sql(await agents.replay(text, case))
                ok = False
                if sql is not None:
                    executed = await execute_checked(state, case.database, sql)
                    ok = executed.result is not None and equivalent(gold, case.correct_sql, executed.result)
                outcome[name] = ok
            return outcome

    found = await asyncio.gather(*(one(c) for c in held_out))
    return [i for i in found if i is not None], versions


async def keep_report(store: Store, evaluation: dict[str, Any], version: int, database: str | None,
                      actor: str) -> int | None:
    """Store the evaluation's regression report (taken out of it: the version keeps the summary) in its
    own transaction; its id, or None when nothing was replayed."""
    report = evaluation.pop("regression_report", None)
    if report is None:
        return None
    report_id = await regressions.add(store.pool, report=report, subject=f"guideline v{version}", actor=actor,
                                      passed=not report["regressions"], guideline_version=version,
                                      database=database)
    evaluation["regression_report_id"] = report_id
    return report_id
