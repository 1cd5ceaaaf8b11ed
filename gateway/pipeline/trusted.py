"""Trusted answers: a DBA's template answers a question that matches it, without the LLM.

The template's SQL runs as any attempt does (:meth:`gateway.pipeline.loop._Run.check_and_run`): checked
under the database's current rules, row-filtered for the caller's claims, run as the caller's Postgres role
with its row-policy settings, validated. Its parameter values are bound as the statement's ``$1 ...``, never
spliced into the text, and are checked first against the column's domain *as this caller may read it*: the
known values come from the caller's view of the schema (gateway.context.scope), so a suggestion never spells
a value the caller could not read, and a template that reads a column the caller may not read is not
available to that caller at all (neither matched, listed nor run).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway import errors, safety
from gateway.context.build import prepare
from gateway.context.scope import row_filtered
from gateway.context.snapshot import SchemaSnapshot
from gateway.execute import QueryResult
from gateway.findings import Finding, family_of
from gateway.learning.templates import Template, ValueOutOfDomain, check_value, match_question
from gateway.observability.logging import get_logger
from gateway.pipeline.ports import Templates
from gateway.pipeline.question import Question
from gateway.pipeline.respond import Answer, Attempt, status_of
from gateway.pipeline.tally import log_attempt
from gateway.pipeline.validate import triggers
from gateway.settings import AskPolicy

log = get_logger(__name__)

OnAttempt = Callable[[Attempt], Awaitable[None]]
TTL_S = 5.0  # how long a replica answers from the templates it read (a change elsewhere lands within it)
DOMAINS_KEPT = 256  # callers' domains kept (as context.scoped_views_max bounds their views)


class CheckAndRun(Protocol):
    async def __call__(self, sql: str, timings: dict[str, float],
                       args: tuple[str, ...] = ()) -> tuple[list[Finding], QueryResult | None]: ...


@dataclass(frozen=True, slots=True)
class Domain:
    """What one caller may read of a database, as far as templates are concerned."""

    columns: dict[str, str]  # "table.column" -> type, readable by the caller and not hidden
    known: dict[str, list[str]]  # "table.column" -> the known values the caller may read
    policy: safety.Policy  # what the caller may not read: a template whose SQL reads it is not for the caller
    verdicts: dict[str, bool] = field(default_factory=dict, compare=False)  # SQL -> available, memoized
    # Tables whose rows depend on the reader (row-level security for this caller, row filter rules), lower
    # case: a DBA's default value of their columns may spell a row this caller cannot read.
    reader_dependent: frozenset[str] = frozenset()

    def shows_default(self, column: str) -> bool:
        table = column.rsplit(".", 1)[0].lower()
        return table not in self.reader_dependent and table.rsplit(".", 1)[-1] not in self.reader_dependent

    def available(self, template: Template) -> bool:
        """The template reads nothing the caller may not, and binds only columns the caller may read."""
        if any(p.column not in self.columns for p in template.parameters):
            return False
        shown = self.verdicts.get(template.sql)
        if shown is None:
            verdict = safety.check(template.sql, self.policy)
            shown = self.verdicts[template.sql] = not any(f.code in _UNREADABLE for f in verdict.findings)
        return shown

    def reads_shared_only(self, sql: str) -> bool:
        """``sql`` reads nothing the caller may not and no table whose rows depend on the reader: its words
        (a stored question, say) cannot spell a row another reader owns."""
        dependent = self.reader_dependent | {t.rsplit(".", 1)[-1] for t in self.reader_dependent}
        policy = safety.Policy(hidden_tables=self.policy.hidden_tables | dependent,
                               hidden_columns=self.policy.hidden_columns,
                               extra_functions=self.policy.extra_functions)
        return not any(f.code in _UNREADABLE for f in safety.check(sql, policy).findings)


_UNREADABLE = frozenset({"hidden_table", "hidden_column", "parse_error"})


async def domain(state: Templates, database: str, role: str | None, claims: tuple[tuple[str, str], ...]) -> Domain:
    """The caller's domain: its view of the snapshot (its role's grants, its row policy; the rules' hidden
    names left out), as the value hints use it."""
    rules = state.ruleset(database)
    snapshot = await state.schemas.view(state.target(database), rules, role, claims)
    prepared = prepare(snapshot, rules, state.settings.context.sample_values)
    # Kept while the view's preparation is the same object (a refresh or a rules reload makes a new one).
    cache = state.domain_cache
    key = (database, role, tuple(claims))
    hit = cache.get(key)
    if hit is not None and hit[0] is prepared:
        return hit[1]
    columns = {f"{t.qualified_name}.{c.name}": c.type for t in prepared.schema.tables for c in t.columns}
    known = {f"{table}.{column}": list(found) for (table, column), found in prepared.values.items()}
    dependent = frozenset(t.lower() for t in snapshot.row_secured) \
        | row_filtered(rules, snapshot.full or snapshot.schema)
    made = Domain(columns, known, _policy(snapshot, prepared.schema, rules), reader_dependent=dependent)
    if len(cache) >= DOMAINS_KEPT:
        cache.clear()
    cache[key] = (prepared, made)
    return made


def _policy(snapshot: SchemaSnapshot, visible: Any, rules: Any) -> safety.Policy:
    """The rules' hidden names plus, on a caller's view, every table and column outside it."""
    full = snapshot.full if snapshot.full is not None else snapshot.schema
    shown = {t.qualified_name: {c.name for c in t.columns} for t in visible.tables}
    tables = {t.qualified_name.lower() for t in full.tables if t.qualified_name not in shown}
    columns = {f"{t.qualified_name}.{c.name}".lower() for t in full.tables if t.qualified_name in shown
               for c in t.columns if c.name not in shown[t.qualified_name]}
    return safety.Policy(hidden_tables=frozenset(tables) | rules.hidden_tables,
                         hidden_columns=frozenset(columns) | rules.hidden_columns,
                         extra_functions=rules.extra_functions)


async def templates_of(state: Templates, database: str) -> list[Template]:
    """The database's templates, read from the store at most every ``TTL_S`` (none without a store)."""
    if state.store is None:
        return []
    cache = state.template_cache
    hit = cache.get(database)
    if hit is not None and time.monotonic() - hit[0] < TTL_S:
        return hit[1]
    from gateway.store import templates as stored

    found = [Template.of(t) for t in await stored.list_all(state.store.pool, database)]
    cache[database] = (time.monotonic(), found)
    return found


def forget(state: Templates) -> None:
    """Drop the cached templates (after a create or delete on this replica)."""
    state.template_cache.clear()


def checked_values(template: Template, given: Mapping[str, str], dom: Domain, *,
                   default_shown: Callable[[str], bool] | None = None) -> dict[str, str]:
    """``given`` (defaults for the rest) checked against the caller's domain; ``template_value_invalid``
    names the first value that does not fit, with the closest known values.

    ``default_shown(column)``: whether the caller is shown the DBA's default of a parameter on ``column``
    (:func:`gateway.learning.promote.view` decides the same; None: every default). A default is used only where it
    would be shown: else the caller must give the value, since the default would come back in the answer,
    or quoted in a refusal, possibly spelling another tenant's value."""
    unknown = sorted(set(given) - {p.name for p in template.parameters})
    if unknown:
        raise errors.InvalidRequest(f"template {template.name!r} has no parameter {unknown[0]!r}; it has "
                                    f"{', '.join(p.name for p in template.parameters) or 'none'}",
                                    template=template.name, parameter=unknown[0])
    out: dict[str, str] = {}
    for p in template.parameters:
        usable_default = p.default if default_shown is None or default_shown(p.column) else None
        raw = given.get(p.name, usable_default)
        if raw is None:
            raise errors.TemplateValueInvalid(f"template {template.name!r} needs a value for {p.name!r}",
                                              template=template.name, parameter=p.name, column=p.column,
                                              value=None, suggestions=dom.known.get(p.column, [])[:5])
        try:
            out[p.name] = check_value(p, str(raw), dom.columns.get(p.column, p.type), dom.known.get(p.column))
        except ValueOutOfDomain as exc:
            raise errors.TemplateValueInvalid(
                f"{exc}" + (f"; closest known values: {', '.join(exc.suggestions)}" if exc.suggestions else ""),
                template=template.name, parameter=p.name, column=p.column, value=str(raw)[:200],
                suggestions=exc.suggestions) from None
    return out


async def run(state: Templates, q: Question, template: Template, values: dict[str, str], policy: AskPolicy,
              on_attempt: OnAttempt | None, check_and_run: CheckAndRun) -> Answer:
    """The template's answer to ``q`` with checked ``values``: one attempt, source ``template``, labelled
    ``trusted``. Validation findings about how the result looks are kept but do not make it suspicious (a
    DBA vouched for this SQL, as an upheld answer); a broken rule, an error or a block still do."""
    began = time.perf_counter()
    timings = {"llm_ms": 0.0, "check_ms": 0.0, "db_ms": 0.0, "acquire_ms": 0.0}
    findings, result = await check_and_run(template.sql, timings, template.args(values))
    timings["total_ms"] = (time.perf_counter() - began) * 1000
    attempt = Attempt(n=1, source="template", sql=template.sql, findings=findings,
                      triggers=triggers(findings, policy), guideline_applied=False,
                      tokens={"prompt": 0, "completion": 0}, timings=timings)
    attempt.result = result
    if attempt.ran and attempt.triggers and all(family_of(c) == "validation" for c in attempt.triggers):
        attempt.upheld = True
    log_attempt(q.database, attempt)
    if on_attempt is not None:
        await on_attempt(attempt)
    answer = Answer(status=status_of(attempt), database=q.database, question=q.question, chosen=attempt,
                    attempts=[attempt], stop_reason="template", guideline_version=None, guideline_applied=False,
                    request_id=q.request_id,
                    trusted={"template": template.name, "parameters": values,
                             "run": f"/v1/templates/{template.name}/run"})
    state.tally.count(q.database, answer.status, [attempt], attempt)
    if attempt.ran and state.store is not None:
        from gateway.store import templates as stored

        try:
            await stored.used(state.store.pool, template.name)
        except Exception as exc:  # noqa: BLE001 - a usage count is not worth failing an answer
            log.warning("template_usage_not_counted", template=template.name, error=repr(exc))
    return answer


async def answer_trusted(state: Templates, q: Question, policy: AskPolicy, on_attempt: OnAttempt | None,
                         check_and_run: CheckAndRun) -> Answer | None:
    """The answer of the one template ``q`` matches, for this caller; None when none matches (or more than
    one could), when the store is down, or when the template no longer runs (the LLM answers as usual)."""
    if not state.settings.templates.answer_questions:
        return None
    try:
        found = await templates_of(state, q.database)
    except Exception as exc:  # noqa: BLE001 - the store is down: templates help, their absence fails nothing
        log.warning("templates_unavailable", database=q.database, error=repr(exc))
        return None
    if not found:
        return None
    dom = await domain(state, q.database, q.role, q.claims)  # the same view the LLM path's context needs
    # Read first, then whether the caller may use the template: the safety check runs only on a hit.
    matched = match_question(q.question, found, dom.known, dom.columns, usable=dom.available)
    if matched is None:
        return None
    template, values = matched
    answer = await run(state, q, template, values, policy, None, check_and_run)
    if answer.chosen is None or not answer.chosen.ran:
        log.info("template_stale", database=q.database, template=template.name,
                 codes=answer.chosen.codes if answer.chosen else [])
        return None
    if on_attempt is not None:  # only now: a stale template's attempt is not part of the answer
        await on_attempt(answer.chosen)
    return answer
