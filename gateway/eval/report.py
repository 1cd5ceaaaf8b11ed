"""Turn a run's results into numbers per scenario: the JSON report that Markdown, charts and compare read.

Per scenario: EX (strict, and with extra columns allowed) overall, per category and per database; EX of
the first attempt of the same requests; how many wrong first attempts reflection fixed and how many right
ones it broke (the final answer compared with the first attempt *of the same request*, so the model's
run-to-run variation cannot pose as an effect of reflection); attempts, LLM calls and tokens per question;
latency p50/p95. Questions whose gold SQL could not be used are listed and left out of every ratio.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from gateway.eval.runfolder import RunFolder

__all__ = ["build_report", "percentile", "write_report"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no values.

    >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 95), percentile([], 50)
    (2, 4, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return round(sum(items) / len(items), 3) if items else None


def _accuracy(records: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    strict = sum(bool(r.get("correct")) for r in records)
    extra = sum(bool(r.get("correct_extra")) for r in records)
    return {"n": n, "correct": strict, "correct_extra": extra, "ex": _ratio(strict, n), "ex_extra": _ratio(extra, n)}


def _grouped(records: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[str(r.get(key) or "(none)")].append(r)
    return {name: _accuracy(rs) for name, rs in sorted(groups.items())}


def scenario_report(name: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in records if r.get("status") != "gold_error"]
    fixed = sorted(r["id"] for r in scored if r.get("correct") and not r.get("first_correct"))
    broken = sorted(r["id"] for r in scored if r.get("first_correct") and not r.get("correct"))
    latencies = [float(r.get("latency_ms") or 0.0) for r in scored]
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    reflection, _, guideline = name.partition("/")
    clarifications = sum(r.get("status") == "needs_clarification" for r in scored)
    return {
        "name": name,
        "reflection": reflection,
        "guideline": guideline,
        **_accuracy(scored),
        "first_pass_correct": sum(bool(r.get("first_correct")) for r in scored),
        "first_pass_ex": _ratio(sum(bool(r.get("first_correct")) for r in scored), len(scored)),
        "fixed": len(fixed),
        "broken": len(broken),
        "fixed_ids": fixed,
        "broken_ids": broken,
        "by_category": _grouped(scored, "category"),
        "by_database": _grouped(scored, "database"),
        "status_counts": dict(sorted(Counter(str(r.get("status")) for r in scored).items())),
        "attempts_per_question": _mean(r.get("attempts", 0) for r in scored),
        "llm_calls_per_question": _mean(r.get("llm_calls", 0) for r in scored),
        "prompt_tokens_per_question": _mean(r.get("prompt_tokens", 0) for r in scored),
        "completion_tokens_per_question": _mean(r.get("completion_tokens", 0) for r in scored),
        "tokens_per_question": _mean(r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in scored),
        "latency_ms_p50": round(p50, 1) if p50 is not None else None,
        "latency_ms_p95": round(p95, 1) if p95 is not None else None,
        "errors": sum(r.get("status") == "error" for r in scored),
        # A clarifying question is not an answer: it counts as not correct in EX (asking back never raises EX)
        # and is reported here, so that it is not mistaken for wrong SQL.
        "clarifications": clarifications,
        "clarification_rate": _ratio(clarifications, len(scored)),
    }


def build_report(manifest: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole report: run facts, one entry per scenario (manifest order), per-question outcomes."""
    by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_scenario[r["scenario"]].append(r)
    names = [s for s in manifest.get("scenarios", []) if s in by_scenario]
    names += sorted(set(by_scenario) - set(names))
    gold_errors = {r["id"]: r.get("gold_error") for r in results if r.get("status") == "gold_error"}
    questions: dict[str, dict[str, Any]] = {}
    for r in results:
        entry = questions.setdefault(r["id"], {"id": r["id"], "database": r.get("database"),
                                               "category": r.get("category"), "outcomes": {}})
        entry["outcomes"][r["scenario"]] = {
            "correct": bool(r.get("correct")), "correct_extra": bool(r.get("correct_extra")),
            "first_correct": bool(r.get("first_correct")), "status": r.get("status"),
            "attempts": r.get("attempts", 0), "sql": r.get("sql"), "error": r.get("error"),
        }
    return {
        "run": {k: manifest.get(k) for k in ("run_id", "questions_file", "questions_digest", "model", "llm_base_url",
                                             "created_at", "resumed_at", "concurrency")},
        "questions": len(questions),
        "pairs_recorded": len(results),
        "pairs_planned": len(manifest.get("scenarios", [])) * manifest.get("question_count", 0),
        "gold_errors": gold_errors,
        "scenarios": [scenario_report(name, by_scenario[name]) for name in names],
        "per_question": [questions[k] for k in sorted(questions)],
    }


def write_report(folder: RunFolder) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and the charts into the run folder's ``report/``; return the report.

    The charts need the ``eval`` extra (matplotlib); without it the report has no charts and the command says so.
    """
    import json

    from gateway import extras
    from gateway.eval.charts import write_charts
    from gateway.eval.markdown import render_markdown

    report = build_report(folder.manifest(), folder.results())
    out = folder.report_dir
    out.mkdir(parents=True, exist_ok=True)
    charts = [] if extras.missing("eval") else write_charts(report, out)
    (out / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "report.md").write_text(render_markdown(report, charts), encoding="utf-8")
    return report
