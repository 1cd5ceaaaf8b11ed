"""The report for people: Markdown tables built from the JSON report (see :mod:`gateway.eval.report`)."""

from __future__ import annotations

from typing import Any

__all__ = ["render_markdown"]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def render_markdown(report: dict[str, Any], charts: list[str] | None = None) -> str:
    run = report["run"]
    scenarios = report["scenarios"]
    out = [f"# Evaluation run {run.get('run_id')}", ""]
    out += [
        f"- questions: `{run.get('questions_file')}` ({report['questions']} questions, digest "
        f"`{run.get('questions_digest')}`)",
        f"- model: `{run.get('model')}` at `{run.get('llm_base_url') or 'default endpoint'}`",
        f"- results recorded: {report['pairs_recorded']} of {report['pairs_planned']} (scenario, question) pairs",
        f"- started {run.get('created_at')}" + (f", resumed {run['resumed_at']}" if run.get("resumed_at") else ""),
        "",
        "EX is execution accuracy: the answer's rows equal the gold SQL's as a multiset (order compared only when "
        "the gold has a top-level ORDER BY; column names ignored, column order free). *EX+cols* also accepts extra "
        "columns. *First pass* scores the first attempt of the same requests; *fixed* and *broken* count answers "
        "that reflection turned from wrong to right and from right to wrong. *Clarifications* counts questions "
        "the model asked back about instead of answering (status `needs_clarification`): they score as not "
        "correct.",
        "",
        "## Scenarios",
        "",
    ]
    out += _table(
        ["scenario", "EX", "EX+cols", "first pass", "fixed", "broken", "attempts/q", "LLM calls/q", "tokens/q",
         "p50 ms", "p95 ms", "errors", "clarifications"],
        [[s["name"], _pct(s["ex"]), _pct(s["ex_extra"]), _pct(s["first_pass_ex"]), str(s["fixed"]), str(s["broken"]),
          _num(s["attempts_per_question"], 2), _num(s["llm_calls_per_question"], 2),
          _num(s["tokens_per_question"], 0), _num(s["latency_ms_p50"]), _num(s["latency_ms_p95"]), str(s["errors"]),
          str(s.get("clarifications", 0))]
         for s in scenarios],
    )
    for title, key in (("Per category", "by_category"), ("Per database", "by_database")):
        groups = sorted({g for s in scenarios for g in s[key]})
        out += ["", f"## {title} (EX)", ""]
        out += _table(
            [key.removeprefix("by_"), *[s["name"] for s in scenarios]],
            [[g, *[_cell(s[key].get(g)) for s in scenarios]] for g in groups],
        )
    moved = [s for s in scenarios if s["fixed"] or s["broken"]]
    if moved:
        out += ["", "## What reflection changed", ""]
        out += _table(["scenario", "fixed", "broken"],
                      [[s["name"], ", ".join(s["fixed_ids"]) or "–", ", ".join(s["broken_ids"]) or "–"] for s in moved])
    if report["gold_errors"]:
        out += ["", "## Questions left out (gold SQL unusable)", ""]
        out += [f"- `{qid}`: {reason}" for qid, reason in sorted(report["gold_errors"].items())]
    if charts:
        out += ["", "## Charts", ""]
        out += [f"![{name}]({name})" for name in charts]
    out += ["", "## Per question", ""]
    names = [s["name"] for s in scenarios]
    out += _table(["question", "category", *names],
                  [[q["id"], q.get("category") or "", *[_mark(q["outcomes"].get(n)) for n in names]]
                   for q in report["per_question"]])
    out += ["", "✓ right, ✗ wrong, ◐ right only with extra columns allowed, ↑ fixed by reflection, "
            "↓ broken by reflection, · not run."]
    return "\n".join(out) + "\n"


def _cell(group: dict[str, Any] | None) -> str:
    if not group:
        return "–"
    return f"{_pct(group['ex'])} ({group['correct']}/{group['n']})"


def _mark(outcome: dict[str, Any] | None) -> str:
    if outcome is None:
        return "·"
    if outcome["correct"]:
        return "✓↑" if not outcome["first_correct"] else "✓"
    if outcome["first_correct"]:
        return "✗↓"
    return "◐" if outcome["correct_extra"] else "✗"
