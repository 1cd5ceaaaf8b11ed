"""Guideline lifecycle for DBAs: list, show, diff, regenerate, activate (through the gate), roll back, reset
to the shipped default, export.

Shared by the HTTP routes, the CLI and :class:`~gateway.service.Gateway`. Every operation works on a scope:
one database's versions, or the global ones (``database=None``); a database uses its own active version,
else the global one, else the shipped file. Activation of a *candidate* goes through the activation gate
unless forced; re-activating a version that was active before (a rollback) does not, since it was accepted
once. A reset retires the scope's active version, so the shipped default (or, for a database, the global
version) is in force again; like every activation it is recorded in ``guideline_events``.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gateway import errors
from gateway.context.sources import GuidelineSource
from gateway.magic import gate
from gateway.magic.agents import Agents
from gateway.magic.run import Magic, RunReport, refresh_gauges, regenerate
from gateway.state import GatewayState
from gateway.store import Store, guidelines, regressions
from gateway.store.guidelines import GuidelineVersion
from gateway.store.sources import StoreGuidelines, version_label


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


def check_scope(state: GatewayState, database: str | None) -> None:
    """``unknown_database`` for a scope that names no configured database (None, global, always exists)."""
    if database is not None:
        state.target(database)


async def run_regeneration(state: GatewayState, store: Store, *, activate: bool | None = None,
                           trigger: str = "manual", database: str | None = None) -> RunReport:
    """One run (for ``database``, or global); ``regeneration_running`` when another replica holds the lock,
    the run's error when it failed."""
    check_scope(state, database)
    report = await regenerate(magic_for(state, store), trigger, activate=activate, database=database)
    _invalidate(state)
    if report.outcome == "locked":
        raise errors.RegenerationRunning("another replica is regenerating the guideline; try again later")
    if report.outcome == "failed":
        if isinstance(report.exception, errors.GatewayError):
            raise report.exception
        raise errors.GatewayError(f"the regeneration run failed: {report.error}", run_id=report.run_id)
    return report


async def activate(state: GatewayState, store: Store, version: int, *, force: bool = False,
                   actor: str = "unknown") -> GuidelineVersion:
    """Activate ``version`` in its scope (its database, or global); a candidate goes through the gate first
    unless ``force``: the regression replay of the verified set (``guideline_regressed`` when a question right
    before is wrong with it) and the accuracy gate (``guideline_gate_failed``). The replay's report is stored
    before the answer (``regression_reports``); a forced activation names the latest one in its event."""
    target = await get(store, version)
    detail: dict[str, object] = {"forced": force}
    if target.status == "candidate" and not force:
        magic = magic_for(state, store)
        evaluation = await gate.evaluate(state, store, Agents(magic.llm, magic.model), target.text, magic.settings,
                                         database=target.database,
                                         learnt_from=list(target.provenance.get("corrections", [])))
        report_id = await gate.keep_report(store, evaluation, version, target.database, actor)
        await guidelines.set_evaluation(store.pool, version, evaluation)
        if not evaluation["passed"]:
            if evaluation.get("gate_passed", False) and evaluation.get("regressed"):
                lines = "; ".join(f"{r['question']!r}: {r['reason']}" for r in evaluation["regressions"])
                raise errors.GuidelineRegressed(
                    f"version {version} breaks {evaluation['regressed']} verified question(s) right with the "
                    f"guideline in force ({lines}); activate with force to override",
                    regressions=evaluation["regressions"], report_id=report_id, version=version,
                    evaluation=evaluation)
            raise errors.GuidelineGateFailed(
                f"version {version} failed the activation gate: {evaluation['reason']}; activate with force to "
                "override", evaluation=evaluation, report_id=report_id, version=version,
            )
        detail["gate"] = evaluation["method"]
        if report_id is not None:
            detail["regression_report"] = report_id
    elif target.status == "candidate":
        latest = await regressions.for_version(store.pool, version, limit=1)
        if latest:  # the refusal being overridden, on record with the override
            detail["regression_report"] = latest[0].id
            detail["regressed"] = latest[0].regressed
    return await _activate(state, store, version, action="activate", actor=actor, detail=detail)


async def _activate(state: GatewayState, store: Store, version: int, *, action: guidelines.Action, actor: str,
                    detail: dict[str, object]) -> GuidelineVersion:
    activated = await guidelines.activate(store.pool, version, action=action, actor=actor, detail=detail)
    if activated is None:
        raise errors.UnknownGuidelineVersion(f"there is no guideline version {version}", version=version)
    _invalidate(state)
    await refresh_gauges(store, state.settings.magic)
    return activated


async def rollback(state: GatewayState, store: Store, version: int | None = None, *, database: str | None = None,
                   actor: str = "unknown") -> GuidelineVersion:
    """Activate ``version``, or the scope's version that was active before the current one (no gate: it was
    accepted once). ``version`` must belong to the scope (``database``, None: global)."""
    check_scope(state, database)
    activated = await rollback_in_store(store, version, database=database, actor=actor)
    _invalidate(state)
    await refresh_gauges(store, state.settings.magic)
    return activated


async def rollback_in_store(store: Store, version: int | None, *, database: str | None,
                            actor: str) -> GuidelineVersion:
    """:func:`rollback` with only the store (the CLI's, which needs no LLM or target database)."""
    if version is None:
        previous = await guidelines.previous_active(store.pool, database)
        if previous is None:
            raise errors.UnknownGuidelineVersion(f"no earlier active version of {_scope_name(database)} to roll "
                                                 "back to; to use the shipped guideline, reset to the default")
        version = previous.version
    else:
        target = await get(store, version)
        if target.database != database:
            raise errors.UnknownGuidelineVersion(
                f"version {version} belongs to {_scope_name(target.database)}, not to {_scope_name(database)}",
                version=version)
        if target.activated_at is None:
            raise errors.GuidelineNeverActive(
                f"version {version} was never active, so rolling back to it would skip the activation gate; "
                "activate it instead", version=version)
    activated = await guidelines.activate(store.pool, version, action="rollback", actor=actor,
                                          detail={"forced": True})
    if activated is None:
        raise errors.UnknownGuidelineVersion(f"there is no guideline version {version}", version=version)
    return activated


async def reset(state: GatewayState, store: Store, database: str | None = None, *,
                actor: str = "unknown") -> InForce:
    """Go back to the shipped default for a scope: no stored version of ``database`` (None: global) stays
    active, so the database uses the global version or the shipped file (globally: the shipped file).
    Recorded as a ``reset`` event; returns what is in force afterwards (for ``database``, or the file's
    default when global)."""
    check_scope(state, database)
    retired = await guidelines.reset(store.pool, database, actor=actor)
    _invalidate(state)
    await refresh_gauges(store, state.settings.magic)
    found = await in_force(state, store, database)
    found.retired = retired.version if retired else None
    return found


@dataclass
class InForce:
    """Which guideline a scope uses: a stored version (its own or the global one) or the shipped file."""

    database: str | None
    source: Literal["database", "global", "default"]
    version: int | None  # None: the shipped file
    label: str  # as answers report it in ``guideline_version``
    retired: int | None = None  # set by reset: the version it retired

    def as_dict(self) -> dict[str, Any]:
        return {"database": self.database, "source": self.source, "version": self.version, "label": self.label,
                "retired": self.retired}


async def in_force(state: GatewayState, store: Store, database: str | None) -> InForce:
    """What ``database`` uses now (None: what a database without its own version uses)."""
    check_scope(state, database)
    files = state.guidelines.fallback if isinstance(state.guidelines, StoreGuidelines) else state.guidelines
    return await in_force_from(store, database, files)


async def in_force_from(store: Store, database: str | None, files: GuidelineSource) -> InForce:
    """:func:`in_force` from the store and the file guideline source."""
    stored = (await guidelines.in_force(store.pool, database) if database is not None
              else await guidelines.active(store.pool))
    if stored is not None:
        return InForce(database, "database" if stored.database else "global", stored.version,
                       version_label(stored.version))
    label = (await files.active(database)).version if database is not None else "default"
    return InForce(database, "default", None, label)


def _scope_name(database: str | None) -> str:
    return f"database {database!r}" if database else "the global scope"


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
        f"- scope: {('database ' + v.database) if v.database else 'global'}",
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
