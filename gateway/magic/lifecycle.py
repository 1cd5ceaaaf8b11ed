"""Guideline lifecycle for DBAs: list, show, diff, regenerate, activate (through the gate), roll back, export.

Shared by the HTTP routes and the CLI. Activation of a *candidate* goes through the activation gate unless
forced; re-activating a version that was active before (a rollback) does not, since it was accepted once.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from gateway import errors
from gateway.magic import gate
from gateway.magic.agents import Agents
from gateway.magic.run import Magic, RunReport, refresh_gauges, regenerate
from gateway.observability import metrics
from gateway.state import GatewayState
from gateway.store import Store, guidelines
from gateway.store.guidelines import GuidelineVersion
from gateway.store.sources import StoreGuidelines


def magic_for(state: GatewayState, store: Store) -> Magic:
    """The MAGIC dependencies from the running gateway; ``llm_not_configured`` without an LLM."""
    model = state.settings.magic.model or state.settings.llm.model
    if state.llm is None or model is None:
        raise errors.LLMNotConfigured("MAGIC needs an LLM: set llm.base_url (or OPENAI_BASE_URL) and llm.model "
                                      "(or magic.model)")
    return Magic(state=state, store=store, llm=state.llm, settings=state.settings.magic, model=model,
                 baseline=state.guidelines)


async def get(store: Store, version: int) -> GuidelineVersion:
    found = await guidelines.get(store.pool, version)
    if found is None:
        raise errors.UnknownGuidelineVersion(f"there is no guideline version {version}", version=version)
    return found


async def run_regeneration(state: GatewayState, store: Store, *, activate: bool | None = None,
                           trigger: str = "manual") -> RunReport:
    """One run; ``regeneration_running`` when another replica holds the lock, the run's error when it failed."""
    report = await regenerate(magic_for(state, store), trigger, activate=activate)
    _invalidate(state)
    if report.outcome == "locked":
        raise errors.RegenerationRunning("another replica is regenerating the guideline; try again later")
    if report.outcome == "failed":
        if isinstance(report.exception, errors.GatewayError):
            raise report.exception
        raise errors.GatewayError(f"the regeneration run failed: {report.error}", run_id=report.run_id)
    return report


async def activate(state: GatewayState, store: Store, version: int, *, force: bool = False) -> GuidelineVersion:
    target = await get(store, version)
    if target.status == "candidate" and not force:
        magic = magic_for(state, store)
        evaluation = await gate.evaluate(state, store, Agents(magic.llm, magic.model), magic.baseline, target.text,
                                         magic.settings)
        await guidelines.set_evaluation(store.pool, version, evaluation)
        if not evaluation["passed"]:
            raise errors.GuidelineGateFailed(
                f"version {version} failed the activation gate: {evaluation['reason']}; activate with force to "
                "override", evaluation=evaluation,
            )
    activated = await guidelines.activate(store.pool, version)
    assert activated is not None
    _invalidate(state)
    metrics.GUIDELINE_ACTIVE_VERSION.set(version)
    await refresh_gauges(store, state.settings.magic)
    return activated


async def rollback(state: GatewayState, store: Store, version: int | None = None) -> GuidelineVersion:
    """Activate ``version``, or the version that was active before the current one."""
    if version is None:
        previous = await guidelines.previous_active(store.pool)
        if previous is None:
            raise errors.UnknownGuidelineVersion("no earlier active version to roll back to")
        version = previous.version
    return await activate(state, store, version, force=True)


def diff(old: GuidelineVersion, new: GuidelineVersion) -> str:
    return "".join(difflib.unified_diff(
        old.text.splitlines(keepends=True), new.text.splitlines(keepends=True),
        fromfile=f"v{old.version}", tofile=f"v{new.version}",
    ))


def export_name(version: int) -> str:
    # Not "<database>.md" or "default.md": exported versions are for review, the file source must not load them.
    return f"magic-v{version:04d}.md"


def render_markdown(v: GuidelineVersion) -> str:
    corrections = v.provenance.get("corrections", [])
    lines = [
        f"# Guideline v{v.version} ({v.status})", "",
        f"- parent: {('v' + str(v.parent)) if v.parent else 'none (written from scratch)'}",
        f"- created: {v.created_at.isoformat()}",
        f"- provenance: {len(corrections)} correction(s): {', '.join(str(c) for c in corrections)}",
    ]
    unreviewed = v.provenance.get("unreviewed_corrections")
    if unreviewed:  # a run never activates such a version; a DBA decides (gateway.magic.run)
        lines.append(f"- unreviewed corrections (no dba/admin approved them): {', '.join(map(str, unreviewed))}")
    if v.evaluation:
        e = v.evaluation
        verdict = "passed" if e.get("passed") else "failed"
        lines.append(f"- evaluation ({e.get('method')}): {verdict}; {e.get('reason')}")
    lines += ["", v.text.strip(), ""]
    return "\n".join(lines)


async def export(store: Store, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for v in await guidelines.list_all(store.pool):
        path = directory / export_name(v.version)
        path.write_text(render_markdown(v), encoding="utf-8")
        written.append(path)
    return written


def _invalidate(state: GatewayState) -> None:
    if isinstance(state.guidelines, StoreGuidelines):
        state.guidelines.invalidate()


def provenance_json(v: GuidelineVersion) -> str:
    return json.dumps(v.provenance, indent=2, default=str)
