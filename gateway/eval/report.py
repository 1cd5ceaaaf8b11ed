"""Turn a run's results into numbers per scenario: the JSON report that Markdown, charts and compare read.

Per scenario: EX (strict, and with extra columns allowed) overall, per category and per database; EX of
the first attempt of the same requests; how many wrong first attempts reflection fixed and how many right
ones it broke (the final answer compared with the first attempt *of the same request*, so the model's
run-to-run variation cannot pose as an effect of reflection); attempts, LLM calls and tokens per question;
latency p50/p95. Questions whose gold SQL could not be used are listed and left out of every ratio.

Comparable numbers: EX under the project's strict comparison and under the public benchmarks' conventions
(``ex_defog``: defog sql-eval; ``ex_bird``: BIRD; see :mod:`gateway.eval.score`).

Validation precision: per scenario, of the requests whose first attempt was right, how many the loop
reflected on because validation flagged them and how many ended ``suspicious`` (``false_alarms``; under
``gold_first`` every first attempt is the gold SQL); over the whole run, for every finding code, how often
it fired on right and on wrong attempts (``findings``: precision = share of its firings on wrong attempts,
recall = share of wrong attempts it fired on; each distinct (question, SQL) attempt counted once, since
scenarios repeat the same first attempt).

A scenario with several candidates (``.../cN``) scores its first candidate as the first pass: it is drawn as
the single generation is, so *fixed* and *broken* say what choosing among N candidates (and reflecting on the
choice) changed against a single generation of the same request. It also reports *oracle EX* (some
candidate was right: the ceiling of any selector), the mean agreement (share of the N in the chosen group)
and how the answers were chosen.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import ScenarioError, parse_scenario
from gateway.findings import CODES
from gateway.pipeline.generate import normalize_sql

__all__ = ["FINDING_CODES", "build_report", "finding_precision", "percentile", "write_report"]

# Every finding code an attempt can carry that may trigger a reflection (the registry's reflectable codes),
# so that a code that never fired shows in the table as 0 rather than missing; codes a run saw that are not
# listed here are added.
FINDING_CODES = tuple(code.name for code in CODES.values() if code.reflectable)


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
    defog = sum(bool(r.get("correct_defog")) for r in records)
    bird = sum(bool(r.get("correct_bird")) for r in records)
    return {"n": n, "correct": strict, "correct_extra": extra, "ex": _ratio(strict, n), "ex_extra": _ratio(extra, n),
            "correct_defog": defog, "ex_defog": _ratio(defog, n), "correct_bird": bird, "ex_bird": _ratio(bird, n)}


def false_alarms(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Of the requests whose first attempt was right: how many were reflected on because validation flagged
    it (a guideline review of a passing answer, under ``all``, is the scenario's design, not an alarm), and
    how many ended suspicious."""
    right = [r for r in records if r.get("first_correct")]
    reflected = sorted(r["id"] for r in right if int(r.get("attempts") or 0) > 1
                       and not ((r.get("trace") or [{}])[0].get("passed", False)))
    suspicious = sorted(r["id"] for r in right if r.get("status") == "suspicious")
    either = sorted(set(reflected) | set(suspicious))
    return {"right_first": len(right), "reflected": len(reflected), "suspicious": len(suspicious),
            "reflected_or_suspicious": len(either), "rate": _ratio(len(either), len(right)), "ids": either}


def finding_precision(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per finding code: firings on right and on wrong attempts, precision and recall (see the module doc)."""
    attempts: dict[tuple[str, str], tuple[bool, set[str]]] = {}
    for r in results:
        verdicts = r.get("attempt_correct")
        if not isinstance(verdicts, list):
            continue  # recorded before attempts were scored one by one
        for attempt, right in zip(r.get("trace") or [], verdicts, strict=False):
            if right is None:
                continue  # a repeated SQL, not run again
            key = (str(r["id"]), normalize_sql(attempt.get("sql") or ""))
            attempts.setdefault(key, (bool(right), {f.get("code") for f in attempt.get("findings", [])}))
    wrong = sum(not right for right, _ in attempts.values())
    seen = {code for _, codes in attempts.values() for code in codes}
    codes = [*FINDING_CODES, *sorted(seen - set(FINDING_CODES))]
    rows = []
    for code in [*codes, "(any)"]:
        hits = [right for right, found in attempts.values() if (found if code == "(any)" else code in found)]
        on_right, on_wrong = sum(hits), len(hits) - sum(hits)
        rows.append({"code": code, "fired": len(hits), "on_correct": on_right, "on_incorrect": on_wrong,
                     "precision": _ratio(on_wrong, len(hits)), "recall": _ratio(on_wrong, wrong)})
    return {"attempts": len(attempts), "correct": len(attempts) - wrong, "incorrect": wrong, "codes": rows}


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
    reflection: str
    try:
        scenario = parse_scenario(name)
        reflection, guideline, candidates = scenario.reflection, scenario.guideline, scenario.candidates
    except ScenarioError:  # a name written by an older or newer version: report it as it is
        reflection, _, guideline = name.partition("/")
        candidates = 1
    clarifications = sum(r.get("status") == "needs_clarification" for r in scored)
    return {
        "name": name,
        "reflection": reflection,
        "guideline": guideline,
        "candidates": candidates,
        **_candidate_figures(scored),
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
        # why the wrong answers are wrong (gateway.eval.reasons); answers recorded before reasons count as "?"
        "reasons": dict(sorted(Counter(str(r.get("reason") or "?") for r in scored if not r.get("correct")).items())),
        "false_alarms": false_alarms(scored),
        # A clarifying question is not an answer: it counts as not correct in EX (asking back never raises EX)
        # and is reported here, so that it is not mistaken for wrong SQL.
        "clarifications": clarifications,
        "clarification_rate": _ratio(clarifications, len(scored)),
    }


def _candidate_figures(scored: list[dict[str, Any]]) -> dict[str, Any]:
    drawn = [r for r in scored if r.get("candidates")]
    if not drawn:
        return {}
    oracle = sum(bool(r.get("any_candidate_correct")) for r in drawn)
    return {
        "oracle_correct": oracle,
        "oracle_ex": _ratio(oracle, len(scored)),
        "agreement_mean": _mean(float(r.get("agreement") or 0.0) for r in drawn),
        "selections": dict(sorted(Counter(str(r.get("selection")) for r in drawn).items())),
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
            "reason": r.get("reason"),
        }
    return {
        "run": {k: manifest.get(k) for k in ("run_id", "questions_file", "questions_digest", "model", "llm_base_url",
                                             "created_at", "resumed_at", "concurrency")},
        "questions": len(questions),
        "pairs_recorded": len(results),
        "pairs_planned": len(manifest.get("scenarios", [])) * manifest.get("question_count", 0),
        "gold_errors": gold_errors,
        "scenarios": [scenario_report(name, by_scenario[name]) for name in names],
        "findings": finding_precision([r for r in results if r.get("status") != "gold_error"]),
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
