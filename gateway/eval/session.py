"""One ``eval run`` from start to report: open the gateway, resolve guidelines, run, report, collect."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any, TextIO

from gateway import errors
from gateway.context.model import Guideline
from gateway.eval import pipeline
from gateway.eval.questions import Question
from gateway.eval.report import write_report
from gateway.eval.runfolder import RunFolder
from gateway.eval.runner import AnswerFn, EvalStopped, run_eval
from gateway.eval.scenarios import Scenario
from gateway.observability.logging import configure_logging
from gateway.settings import Settings
from gateway.store import Store

__all__ = ["NOTHING_SCORED", "STOPPED", "run_session", "summary_table"]

NOTHING_SCORED = 1  # exit status when the run finished without a single scored answer
STOPPED = 3  # exit status when infrastructure trouble stopped the run (finished results are kept)


async def run_session(settings: Settings, folder: RunFolder | Callable[[], RunFolder], questions: Sequence[Question],
                      scenarios: Sequence[Scenario], *, concurrency: int, progress: bool, collect: bool,
                      log_level: str = "WARNING", answer_fn: AnswerFn = pipeline.answer,
                      out: TextIO | None = None) -> int:
    """Run, write the report, optionally collect corrections; returns the process exit status.

    ``folder`` may be a function that makes the run folder: it is called only once the preflight passed,
    so a run that cannot start leaves no empty folder behind.
    """
    out = out or sys.stdout
    configure_logging(log_level, settings.logging.json_logs)
    needs_store = collect or any(s.guideline_version is not None for s in scenarios)
    async with AsyncExitStack() as stack:
        try:
            store = await stack.enter_async_context(pipeline.open_store(settings)) if needs_store else None
            state = await stack.enter_async_context(pipeline.open_gateway(settings))
            await pipeline.preflight(state, questions)
            guidelines = await _guidelines(settings, store, questions, scenarios)
            if not isinstance(folder, RunFolder):
                folder = folder()
        except pipeline.EvalSetupError as exc:
            print(f"cannot start: {exc}", file=sys.stderr)
            return 2
        except errors.GatewayError as exc:  # the store or a database is not reachable
            print(f"cannot start: {exc.code}: {exc.detail}", file=sys.stderr)
            return 2
        status = 0
        try:
            summary = await run_eval(state, folder, questions, scenarios, guidelines, answer_fn,
                                     concurrency=concurrency, progress=progress)
            print(f"finished {summary.finished} pairs ({summary.skipped} recorded earlier)", file=sys.stderr)
        except EvalStopped as exc:
            print(f"stopped: {exc}\nfinished results are saved; resume with --run-id {folder.run_id}",
                  file=sys.stderr)
            status = STOPPED
        report = write_report(folder)
        out.write(summary_table(report))
        out.write(f"report: {folder.report_dir / 'report.md'}\n")
        if status == 0 and all(s["ex"] is None for s in report["scenarios"]):
            print(f"nothing was scored (every gold SQL failed, or no pair ran): see {folder.report_dir / 'report.md'}",
                  file=sys.stderr)
            status = NOTHING_SCORED
        if collect and store is not None:
            from gateway.eval.collect import collect_corrections

            collected = await collect_corrections(store, folder, questions, [s.name for s in scenarios])
            out.write(f"corrections stored: {collected.stored} (already stored earlier: {collected.already}, "
                      f"same SQL in another scenario: {collected.duplicates}, no SQL to learn from: "
                      f"{collected.without_sql})\n")
    return status


async def _guidelines(settings: Settings, store: Store | None, questions: Sequence[Question],
                      scenarios: Sequence[Scenario]) -> dict[tuple[str, str], Guideline]:
    resolved: dict[tuple[str, str], Guideline] = {}
    for database in sorted({q.database for q in questions}):
        for choice in dict.fromkeys(s.guideline for s in scenarios):
            resolved[(database, choice)] = await pipeline.resolve_guideline(settings, store, database, choice)
    return resolved


def summary_table(report: dict[str, Any]) -> str:
    """The scenarios at a glance, for the terminal."""
    header = (f"{'scenario':<24} {'EX':>7} {'EX+cols':>8} {'defog':>7} {'BIRD':>7} {'first':>7} {'fixed':>6} "
              f"{'broken':>7} {'alarms':>7} {'calls/q':>8} {'tokens/q':>9} {'p50 ms':>8}")
    lines = [header, "-" * len(header)]
    for s in report["scenarios"]:
        def pct(v: float | None) -> str:
            return "–" if v is None else f"{100 * v:.1f}%"
        alarms = (s.get("false_alarms") or {}).get("rate")
        lines.append(f"{s['name']:<24} {pct(s['ex']):>7} {pct(s['ex_extra']):>8} {pct(s.get('ex_defog')):>7} "
                     f"{pct(s.get('ex_bird')):>7} {pct(s['first_pass_ex']):>7} {s['fixed']:>6} {s['broken']:>7} "
                     f"{pct(alarms):>7} {s['llm_calls_per_question'] or 0:>8.2f} "
                     f"{s['tokens_per_question'] or 0:>9.0f} {s['latency_ms_p50'] or 0:>8.0f}")
    wrong = [(s["name"], s.get("reasons") or {}) for s in report["scenarios"]]
    if any(reasons for _, reasons in wrong):
        lines += ["", "wrong answers by reason:"]
        lines += [f"{name:<24} " + ", ".join(f"{k} {v}" for k, v in reasons.items()) for name, reasons in wrong
                  if reasons]
    findings = report.get("findings") or {}
    if findings.get("attempts"):
        lines += ["", f"finding codes over {findings['attempts']} distinct attempts ({findings['correct']} right, "
                  f"{findings['incorrect']} wrong):",
                  f"{'code':<20} {'fired':>6} {'on right':>9} {'on wrong':>9} {'precision':>10} {'recall':>7}"]
        lines += [f"{c['code']:<20} {c['fired']:>6} {c['on_correct']:>9} {c['on_incorrect']:>9} "
                  f"{pct(c['precision']):>10} {pct(c['recall']):>7}" for c in findings["codes"] if c["fired"]]
        if not any(c["fired"] for c in findings["codes"]):
            lines.append("(no finding fired)")
    dropped = report.get("gold_errors") or {}
    if dropped:  # not scored in any scenario: say which and why, not only in report.md
        lines += ["", f"{len(dropped)} question{'s' if len(dropped) > 1 else ''} left out of the scores "
                  f"({'their' if len(dropped) > 1 else 'its'} gold SQL failed):"]
        lines += [f"  {qid}: {reason}" for qid, reason in sorted(dropped.items())]
    return "\n".join(lines) + "\n"
