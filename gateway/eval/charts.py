"""PNG charts of a report: EX per scenario, fixed vs broken, cost per question (matplotlib, no display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["CHART_FILES", "write_charts"]

CHART_FILES = ("ex_per_scenario.png", "fixed_vs_broken.png", "cost_per_question.png")


def write_charts(report: dict[str, Any], folder: Path) -> list[str]:
    """Write the three charts into ``folder``; returns their file names (empty when nothing was scored)."""
    scenarios = [s for s in report["scenarios"] if s["n"]]
    if not scenarios:
        return []
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    names = [s["name"] for s in scenarios]
    xs = list(range(len(names)))
    width = 0.38
    written = []

    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(names) + 2), 4.2))
    strict = [100 * (s["ex"] or 0) for s in scenarios]
    extra = [100 * (s["ex_extra"] or 0) for s in scenarios]
    bars = ax.bar([x - width / 2 for x in xs], strict, width, label="EX", color="#3b6ea8")
    ax.bar([x + width / 2 for x in xs], extra, width, label="EX, extra columns allowed", color="#9cbcdf")
    ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_ylabel("execution accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Execution accuracy per scenario")
    _xticks(ax, xs, names)
    ax.legend(loc="lower right", fontsize=8)
    written.append(_save(fig, folder, CHART_FILES[0]))

    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(names) + 2), 4.2))
    fixed = [s["fixed"] for s in scenarios]
    broken = [-s["broken"] for s in scenarios]
    ax.bar(xs, fixed, 0.6, label="fixed by reflection (wrong → right)", color="#3a9a5b")
    ax.bar(xs, broken, 0.6, label="broken by reflection (right → wrong)", color="#c0504d")
    ax.axhline(0, color="black", linewidth=0.8)
    for x, f, b in zip(xs, fixed, broken, strict=True):
        if f:
            ax.annotate(f"+{f}", (x, f), ha="center", va="bottom", fontsize=8)
        if b:
            ax.annotate(f"−{-b}", (x, b), ha="center", va="top", fontsize=8)
    top = max([1, *fixed, *(-b for b in broken)])
    ax.set_ylim(-top * 1.3, top * 1.3)
    ax.set_ylabel("questions")
    ax.set_title("What reflection changed, per scenario")
    _xticks(ax, xs, names)
    ax.legend(loc="upper left", fontsize=8)
    written.append(_save(fig, folder, CHART_FILES[1]))

    fig, (left, right) = plt.subplots(1, 2, figsize=(max(9.0, 1.6 * len(names) + 3), 4.2))
    prompt = [s["prompt_tokens_per_question"] or 0 for s in scenarios]
    completion = [s["completion_tokens_per_question"] or 0 for s in scenarios]
    left.bar(xs, prompt, 0.6, label="prompt tokens", color="#7f7fbf")
    left.bar(xs, completion, 0.6, bottom=prompt, label="completion tokens", color="#d9a441")
    left.set_title("Tokens per question")
    _xticks(left, xs, names)
    left.legend(fontsize=8)
    p50 = [(s["latency_ms_p50"] or 0) / 1000 for s in scenarios]
    p95 = [(s["latency_ms_p95"] or 0) / 1000 for s in scenarios]
    right.bar([x - width / 2 for x in xs], p50, width, label="p50", color="#4f9fa8")
    right.bar([x + width / 2 for x in xs], p95, width, label="p95", color="#a8d4d9")
    calls = [s["llm_calls_per_question"] or 0 for s in scenarios]
    for x, c, h in zip(xs, calls, p95, strict=True):
        right.annotate(f"{c:.2f} calls", (x, h), ha="center", va="bottom", fontsize=7)
    right.set_title("Latency per question (s) and LLM calls")
    _xticks(right, xs, names)
    right.legend(fontsize=8)
    written.append(_save(fig, folder, CHART_FILES[2]))
    return written


def _xticks(ax: Any, xs: list[int], names: list[str]) -> None:
    ax.set_xticks(xs)
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)


def _save(fig: Any, folder: Path, name: str) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name
