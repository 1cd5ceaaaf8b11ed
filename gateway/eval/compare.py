"""``eval compare RUN_A RUN_B``: what changed between two runs, scenario by scenario and question by question.

Only (scenario, question) pairs recorded in both runs are compared, so a run that is still partial, or one
made on a larger question set, compares on what the two have in common.
"""

from __future__ import annotations

from typing import Any

from gateway.eval.report import build_report
from gateway.eval.runfolder import RunFolder

__all__ = ["compare_runs", "render_comparison"]


def compare_runs(a: RunFolder, b: RunFolder) -> dict[str, Any]:
    results_a = {(r["scenario"], r["id"]): r for r in a.results()}
    results_b = {(r["scenario"], r["id"]): r for r in b.results()}
    common = sorted(set(results_a) & set(results_b))
    manifest_a, manifest_b = a.manifest(), b.manifest()
    report_a = build_report(manifest_a, [results_a[k] for k in common])
    report_b = build_report(manifest_b, [results_b[k] for k in common])
    rows_b = {s["name"]: s for s in report_b["scenarios"]}
    scenarios = []
    for sa in report_a["scenarios"]:
        sb = rows_b[sa["name"]]
        keys = [k for k in common if k[0] == sa["name"]]
        gained = sorted(k[1] for k in keys if results_b[k].get("correct") and not results_a[k].get("correct"))
        lost = sorted(k[1] for k in keys if results_a[k].get("correct") and not results_b[k].get("correct"))
        # each question right in A and wrong in B, with the reason and both SQLs: the regression report of a
        # model, prompt or policy change measured as two runs
        regressions = [{"id": q, "reason": results_b[(sa["name"], q)].get("reason"),
                        "before_sql": results_a[(sa["name"], q)].get("sql"),
                        "after_sql": results_b[(sa["name"], q)].get("sql")} for q in lost]
        scenarios.append({"name": sa["name"], "n": sa["n"], "a": sa, "b": sb, "gained": gained, "lost": lost,
                          "regressions": regressions})
    return {
        "a": a.run_id, "b": b.run_id,
        "same_questions": manifest_a.get("questions_digest") == manifest_b.get("questions_digest"),
        "model_a": manifest_a.get("model"), "model_b": manifest_b.get("model"),
        "only_in_a": len(set(results_a) - set(results_b)), "only_in_b": len(set(results_b) - set(results_a)),
        "scenarios": scenarios,
    }


def _delta(a: float | None, b: float | None, scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
    if a is None or b is None:
        return "–"
    change = f"{(b - a) * scale:+.{digits}f}" + (" pts" if unit == "%" else "")
    return f"{a * scale:.{digits}f}{unit} → {b * scale:.{digits}f}{unit} ({change})"


def render_comparison(diff: dict[str, Any]) -> str:
    lines = [f"comparing run {diff['a']} (A) with run {diff['b']} (B)"]
    if not diff["same_questions"]:
        lines.append("note: the runs used different question sets; only questions in both are compared")
    if diff["model_a"] != diff["model_b"]:
        lines.append(f"models: A {diff['model_a']}, B {diff['model_b']}")
    if diff["only_in_a"] or diff["only_in_b"]:
        lines.append(f"pairs only in A: {diff['only_in_a']}, only in B: {diff['only_in_b']} (not compared)")
    if not diff["scenarios"]:
        lines.append("no (scenario, question) pair was recorded in both runs")
        return "\n".join(lines) + "\n"
    header = f"{'scenario':<24} {'n':>4}  {'EX':<26} {'fixed':<12} {'broken':<12} {'tokens/q':<26} p50 latency (ms)"
    lines += ["", header, "-" * len(header)]
    for s in diff["scenarios"]:
        a, b = s["a"], s["b"]
        lines.append(
            f"{s['name']:<24} {s['n']:>4}  {_delta(a['ex'], b['ex'], 100, unit='%'):<26} "
            f"{a['fixed']:>3} → {b['fixed']:<5} {a['broken']:>3} → {b['broken']:<5} "
            f"{_delta(a['tokens_per_question'], b['tokens_per_question'], digits=0):<26} "
            f"{_delta(a['latency_ms_p50'], b['latency_ms_p50'], digits=0)}"
        )
    changed = [s for s in diff["scenarios"] if s["gained"] or s["lost"]]
    lines += ["", "questions that changed (right in B only: +, right in A only: -):" if changed
              else "no question changed its outcome"]
    for s in changed:
        marks = [f"+{q}" for q in s["gained"]] + [f"-{q}" for q in s["lost"]]
        lines.append(f"  {s['name']}: {' '.join(marks)}")
    regressed = [(s["name"], r) for s in diff["scenarios"] for r in s.get("regressions", [])]
    if regressed:
        lines += ["", "regressions (right in A, wrong in B), with the reason:"]
        for name, r in regressed:
            lines += [f"  {name} {r['id']}: {r['reason'] or '?'}", f"    A: {r['before_sql'] or '-'}",
                      f"    B: {r['after_sql'] or '-'}"]
    return "\n".join(lines) + "\n"
