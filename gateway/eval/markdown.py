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
    out += ["", "## Comparable EX", "",
            "The same answers under the public benchmarks' conventions. *defog sql-eval*: duplicate rows dropped, "
            "row order compared only when the question asks for an order, extra columns allowed (the gold's columns "
            "a subset of the answer's). *BIRD*: the rows as a set of tuples, columns in order.", ""]
    out += _table(["scenario", "EX (strict)", "EX (defog sql-eval)", "EX (BIRD)"],
                  [[s["name"], _pct(s["ex"]), _pct(s.get("ex_defog")), _pct(s.get("ex_bird"))] for s in scenarios])
    out += _validation(report, scenarios)
    drawn = [s for s in scenarios if s.get("candidates", 1) > 1]
    if drawn:
        out += ["", "## Candidates against a single generation", "",
                "*Single* scores the first candidate, drawn exactly as a single generation is, in the same "
                "requests; *fixed* and *broken* compare the answer with it. *Oracle* counts questions where some "
                "candidate was right (the most any selector could reach); *agreement* is the mean share of the "
                "candidates in the chosen group.", ""]
        out += _table(
            ["scenario", "candidates", "EX", "single", "fixed", "broken", "oracle", "agreement", "LLM calls/q",
             "tokens/q", "chosen by"],
            [[s["name"], str(s["candidates"]), _pct(s["ex"]), _pct(s["first_pass_ex"]), str(s["fixed"]),
              str(s["broken"]), _pct(s.get("oracle_ex")), _num(s.get("agreement_mean"), 2),
              _num(s["llm_calls_per_question"], 2), _num(s["tokens_per_question"], 0),
              ", ".join(f"{k} {v}" for k, v in (s.get("selections") or {}).items()) or "–"] for s in drawn],
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
    out += _reasons(report, scenarios)
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


def _reasons(report: dict[str, Any], scenarios: list[dict[str, Any]]) -> list[str]:
    """Why each wrong answer is wrong (error, blocked, empty, missing/extra rows or columns, wrong values, order)."""
    wrong = [(q["id"], name, o) for q in report["per_question"] for name, o in q["outcomes"].items()
             if not o["correct"]]
    if not wrong:
        return []
    out = ["", "## Wrong answers and why", ""]
    out += _table(["scenario", "reasons"], [[s["name"], ", ".join(f"{k} {v}" for k, v in (s.get("reasons") or {})
                                                               .items()) or "–"] for s in scenarios])
    out += [""]
    out += _table(["question", "scenario", "reason", "status", "SQL"],
                  [[qid, name, o.get("reason") or "?", str(o.get("status")),
                    f"`{(o.get('sql') or o.get('error') or '').replace('|', '/')}`"] for qid, name, o in wrong])
    return out


def _validation(report: dict[str, Any], scenarios: list[dict[str, Any]]) -> list[str]:
    out = ["", "## Validation precision", "",
           "Requests whose first attempt was right, and how many of them the loop still reflected on or left "
           "`suspicious` (under `gold_first` the first attempt is the gold SQL itself).", ""]
    out += _table(["scenario", "right first", "reflected", "suspicious", "either", "rate", "questions"],
                  [[s["name"], str(fa["right_first"]), str(fa["reflected"]), str(fa["suspicious"]),
                    str(fa["reflected_or_suspicious"]), _pct(fa["rate"]), ", ".join(fa["ids"]) or "–"]
                   for s in scenarios if (fa := s.get("false_alarms"))])
    findings = report.get("findings")
    if findings:
        out += ["", f"Each finding code over {findings['attempts']} distinct attempts ({findings['correct']} right, "
                f"{findings['incorrect']} wrong under strict EX). *Precision*: share of its firings on wrong "
                "attempts; *recall*: share of wrong attempts it fired on.", ""]
        out += _table(["code", "fired", "on right", "on wrong", "precision", "recall"],
                      [[c["code"], str(c["fired"]), str(c["on_correct"]), str(c["on_incorrect"]), _pct(c["precision"]),
                        _pct(c["recall"])] for c in findings["codes"]])
    return out


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
