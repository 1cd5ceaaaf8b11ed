"""``Gateway``: the whole gateway as one Python object, opened from settings and closed when done.

Every entry point is a thin adapter over it: the HTTP app (its lifespan opens one), the CLI, ``eval``, the
MCP server and the tests. None of them assembles resources of its own.

    import asyncio
    from gateway import Gateway, load_settings

    async def main() -> None:
        async with Gateway(load_settings()) as gw:
            outcome = await gw.sql("demo", "SELECT count(*) AS n FROM orders")
            print(outcome.result.rows)

    asyncio.run(main())

Each operation takes an optional :class:`~gateway.auth.Principal`: who asks (an API key's role, databases and
Postgres role). Without one the caller is trusted in-process code acting as admin, as the CLI is; adapters
that face clients (HTTP, MCP) always pass the principal their caller authenticated as.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any

from gateway import __version__, masking, safety
from gateway.auth import ANONYMOUS, Authenticator, Principal
from gateway.backpressure import RateLimits
from gateway.client_sql import SqlOutcome, check_sql, run_client_sql, verdict_view
from gateway.context.search import active_guideline, rules_summary, search_schema
from gateway.corrections import hand_over
from gateway.execute import Targets
from gateway.execute.introspect import introspect
from gateway.feedback import FeedbackIn, StoredFeedback, audit_answer, client_id, store_of, submit
from gateway.llm import open_llm
from gateway.magic import lifecycle
from gateway.magic.run import RunReport
from gateway.magic.wiring import open_feedback_store
from gateway.observability.logging import get_logger
from gateway.pipeline import Answer, Question, Thread, ask, ask_events, corrections_of, llm_for, open_thread
from gateway.pipeline.verified import OnAttempt
from gateway.rules import RulesRegistry, visible_schema
from gateway.rules.grants import PrivilegeReport, report_privileges
from gateway.settings import Settings
from gateway.state import GatewayState
from gateway.store import guidelines
from gateway.store.guidelines import GuidelineEvent, GuidelineVersion

__all__ = ["Gateway"]

log = get_logger(__name__)

_heap = {"frozen": False}  # gc.freeze() runs once per process, after the first Gateway opened

# A statement every parser path sees, checked once at start-up so the first client does not pay for warm-up.
_WARM_UP_SQL = "WITH w AS (SELECT 1 AS x) SELECT count(*) FROM w JOIN w v ON v.x = w.x"


class Gateway:
    """Pools, store, LLM client, rules, caches and the regeneration scheduler, with the operations on them.

    Use it as an async context manager; the resources open on entry and close on exit, in reverse order.
    Operations refused for a reason a caller can act on raise a :class:`~gateway.errors.GatewayError`
    subclass carrying the stable problem ``code`` (``sql_blocked``, ``unknown_database``, ``forbidden``,
    ``llm_not_configured`` ...) and its fields in ``extra``, the same codes the HTTP API answers with.
    """

    def __init__(self, settings: Settings) -> None:
        """Keep the settings; nothing opens until ``async with`` (or ``await gw.__aenter__()``)."""
        self.settings = settings
        self._state: GatewayState | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> Gateway:
        """Open everything: the target pools, rules, LLM client, feedback store (migrations, scheduler) and
        the privilege report. What opened before a failure is closed again before the error propagates."""
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            await self._open(stack)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        """Close what :meth:`__aenter__` opened, in reverse order; the gateway can be opened again."""
        stack, self._stack = self._stack, None
        self._state = None
        if stack is not None:
            await stack.aclose()

    async def _open(self, stack: AsyncExitStack) -> None:
        settings = self.settings
        safety.check(_WARM_UP_SQL)
        targets = await Targets.open(settings)
        stack.push_async_callback(targets.close)
        state = GatewayState(settings=settings, targets=targets)
        state.rules = RulesRegistry(settings.rules_dir)  # DBA rules, reloaded when their files change
        masking.install(targets.by_name, state.policy)  # database errors lose hidden names as they become errors
        state.auth = Authenticator(settings.auth, lambda: state.store)  # API keys, looked up in the store
        state.rate_limits = RateLimits(settings.backpressure)  # per key (or address), in memory per replica
        # None when no endpoint is configured: asking then answers llm_not_configured
        state.llm = await stack.enter_async_context(open_llm(settings.llm))
        await stack.enter_async_context(open_feedback_store(state))  # store.dsn: feedback, guidelines, MAGIC
        await report_privileges(state)  # a role that can read hidden columns or write: log, metric, readiness
        self._state = state
        _freeze_heap()
        log.info("gateway_started", databases=sorted(targets.by_name), version=__version__)
        stack.callback(log.info, "gateway_stopping")

    @property
    def state(self) -> GatewayState:
        """The open resources; adapters hand it to the stages. Raises when the gateway is not open."""
        if self._state is None:
            raise RuntimeError("the Gateway is not open: use `async with Gateway(settings) as gw:`")
        return self._state

    # --- databases and schema -------------------------------------------------------------------------

    def databases(self, principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """The target databases this principal may use: ``name``, ``description``, ``max_rows`` and
        ``statement_timeout_ms`` each, in configuration order."""
        return [
            {"name": t.name, "description": t.settings.description, "max_rows": t.settings.limits.max_rows,
             "statement_timeout_ms": t.settings.limits.statement_timeout_ms}
            for t in self.state.targets.by_name.values() if principal.may_use(t.name)
        ]

    async def schema(self, database: str, *, tables: Sequence[str] | None = None,
                     principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Tables, columns, types, keys and comments; what the rules hide is left out.

        ``tables``: only these (by name, or ``schema.name``); unknown names are simply absent. Raises
        ``unknown_database``, ``forbidden`` (not in the principal's list) or ``database_unavailable``.
        """
        principal.check_database(database)
        state = self.state
        schema = visible_schema(await introspect(state.target(database)), state.ruleset(database)).as_dict()
        if tables:
            wanted = {name.lower() for name in tables}
            schema["tables"] = [t for t in schema.get("tables", [])
                                if t["name"].lower() in wanted or f"{t['schema']}.{t['name']}".lower() in wanted]
        return schema

    # --- SQL a client wrote ---------------------------------------------------------------------------

    def check(self, sql: str, database: str | None = None, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The safety verdict for ``sql`` under ``database``'s policy (hidden names masked), without running it.

        Returns ``{"allowed", "statement_kind", "codes", "findings"}`` (findings as
        :meth:`gateway.findings.Finding.as_dict`). Without ``database`` the SQL is checked under each
        configured database the principal may use, and allowed only when every one of them allows it (else
        the first refusing database's verdict); the default policy applies only when it may use none. A
        refusal is a verdict, not an exception; ``sql_too_large`` and ``unknown_database`` raise.
        """
        if database is not None:
            principal.check_database(database)
            return verdict_view(self.state, check_sql(self.state, sql, database), database)
        # The default policy knows no rules: it would call a hidden column allowed that /v1/sql then refuses
        # on the one database the key has. "Allowed" without a database means allowed wherever it may be run.
        verdict: safety.Verdict | None = None
        judged_by: str | None = None
        for name in self.state.targets.by_name:
            if principal.may_use(name):
                verdict, judged_by = check_sql(self.state, sql, name), name
                if not verdict.allowed:
                    break
        if verdict is None:
            verdict = check_sql(self.state, sql, None)
        return verdict_view(self.state, verdict, judged_by)

    async def sql(self, database: str, sql: str, *, max_rows: int | None = None,
                  principal: Principal = ANONYMOUS) -> SqlOutcome:
        """Check ``sql`` and run exactly that text read-only, as the principal's Postgres role.

        Returns the verdict, the result (``columns``, ``rows``, ``row_count``, ``truncated``; at most
        ``max_rows`` rows, lowered by the database's limits and rules) and the timings. Raises a
        :class:`~gateway.errors.GatewayError` otherwise: ``sql_blocked`` (with the findings),
        ``query_error`` / ``statement_timeout`` ... (with the SQLSTATE), ``unknown_database``, ``forbidden``.
        """
        principal.check_database(database)
        return await run_client_sql(self.state, database, sql, max_rows, role=principal.pg_role,
                                    principal=principal.partition)

    # --- questions ------------------------------------------------------------------------------------

    def question(self, database: str, question: str, *, evidence: str | None = None, max_rows: int | None = None,
                 request_id: str | None = None, principal: Principal = ANONYMOUS,
                 conversation_id: str | None = None, client: str | None = None) -> Question:
        """A question as the pipeline takes it, after the principal's access is checked; pass it to
        :meth:`ask` or :meth:`ask_events`.

        ``evidence``: domain knowledge that helps answer; ``max_rows``: a lower row cap for the answer;
        ``request_id``: the id under which the answer is audited and feedback names it. It is a turn of a
        conversation (with a store): ``conversation_id`` continues one the same client started (the
        principal's API key; without one, ``client``, an ``X-Client-Id``-like name, or ``anonymous``);
        without it the answer starts a new one. Fails with ``llm_not_configured`` up front when no LLM can
        answer (unless verified examples may).
        """
        principal.check_database(database)
        state = self.state
        if not state.settings.store.exact_match_answers:
            llm_for(state, state.target(database))
        return Question(database, question, evidence, max_rows, request_id, role=principal.pg_role,
                        conversation_id=conversation_id, client=client_id(client, principal.key_id),
                        claims=principal.claims)

    async def ask(self, q: Question, thread: Thread | None = None) -> Answer:
        """Answer a question: generate, check, execute, validate and reflect (see :mod:`gateway.pipeline`);
        the answer is a turn of ``q``'s conversation (``thread``, when :meth:`conversation` opened it).

        The :class:`~gateway.pipeline.Answer` has the ``status`` (``ok``, ``suspicious``, ``failed``,
        ``blocked``, ``needs_clarification``), the chosen attempt and every attempt with its findings, and the
        ``stop_reason``; ``answer.as_dict()`` is the ``POST /v1/ask`` body. Raises ``llm_unavailable``,
        ``llm_bad_output`` or ``deadline_exceeded`` when no attempt produced SQL to show.
        """
        return await ask(self.state, q, thread=thread)

    def ask_events(self, q: Question, answers: list[Answer],
                   thread: Thread | None = None) -> AsyncIterator[tuple[str, Any]]:
        """``("attempt", ...)`` per validated attempt (and ``("candidates", ...)`` with ``ask.candidates`` > 1),
        then ``("answer", ...)``; the answer is appended to ``answers``. Closing the iterator cancels the
        question."""
        return ask_events(self.state, q, answers, thread)

    # --- feedback and guidelines ----------------------------------------------------------------------

    async def feedback(self, item: FeedbackIn) -> tuple[StoredFeedback, bool]:
        """Store a verdict (and corrected SQL) on an answer; ``True`` when it was new. Committed first.

        The answer is named by its audited ``request_id``; a ``corrected_sql`` must pass the safety check and
        run. Raises ``store_not_configured``, ``unknown_request``, ``correction_blocked`` or
        ``feedback_conflict`` (the same client already said something else).
        """
        return await submit(store_of(self.state.store), self.state, item)

    async def guidelines(self, database: str | None = None, *, only_global: bool = False) -> list[GuidelineVersion]:
        """Guideline versions (active, candidates, retired) with provenance: all, ``database``'s own, or only
        the global ones."""
        return await guidelines.list_all(store_of(self.state.store).pool, database=database, only_global=only_global)

    async def guideline(self, version: int) -> GuidelineVersion:
        """One guideline version; ``unknown_guideline_version`` when there is none with that number."""
        return await lifecycle.get(store_of(self.state.store), version)

    async def regenerate(self, *, activate: bool | None = None, database: str | None = None) -> RunReport:
        """Run MAGIC over the corrections not yet used (only ``database``'s, making a candidate for it; all,
        making a global candidate, without); returns the run's report.

        ``activate``: activate a new version that passes the gate (``None``: as ``magic.auto_activate``
        says). Raises ``regeneration_running`` when another replica holds the lock, ``llm_not_configured``.
        """
        return await lifecycle.run_regeneration(self.state, store_of(self.state.store), activate=activate,
                                                database=database)

    async def activate(self, version: int, *, force: bool = False, actor: str = "python") -> GuidelineVersion:
        """Make ``version`` the active guideline of its scope (its database, or global). A candidate must first
        pass the activation gate (not worse on held-out verified examples) unless ``force``;
        ``guideline_gate_failed`` says why it did not."""
        return await lifecycle.activate(self.state, store_of(self.state.store), version, force=force, actor=actor)

    async def rollback(self, version: int | None = None, *, database: str | None = None,
                       actor: str = "python") -> GuidelineVersion:
        """Activate ``version``, or the scope's previously active version (``database``; None: global), without
        the gate."""
        return await lifecycle.rollback(self.state, store_of(self.state.store), version, database=database, actor=actor)

    # --- health -----------------------------------------------------------------------------------------

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether every database answers (and passes a ``fail`` privilege check), with the details."""
        state = self.state
        targets = list(state.targets.by_name.values())
        if not targets:  # serving nothing is not being ready
            return False, {"status": "unavailable", "databases": {},
                           "detail": "no database is configured: add a [databases.NAME] table with a dsn"}
        answers = await asyncio.gather(*(t.ping(timeout=1.0) for t in targets))
        results = {t.name: answer for t, answer in zip(targets, answers, strict=True)}
        report = state.extras.get("privileges")
        if report is None or report.stale():
            report = await report_privileges(state, log_each=False)  # bounded per database
        if report is None:
            report = PrivilegeReport()
        privileges = {t.name: report.details(t.name) for t in targets if t.settings.privilege_check != "off"}
        failing = [t.name for t in targets if t.settings.privilege_check == "fail" and privileges[t.name]]
        ready = all(v == "ok" for v in results.values()) and not failing
        return ready, {"status": "ok" if ready else "unavailable", "databases": results, "privileges": privileges}


    # --- rules in force (the console's Rules page; `rules check` over HTTP) --------------------------------

    async def rules(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The rules in force for ``database`` and what ``rules check`` finds in its files right now.

        Names what the rules hide, so only dba and admin keys reach it (gateway.auth.access). ``problems`` are
        the files' problems against the live schema (every table and column, readable or not); ``privileges``
        what the gateway's role may do beyond the rules, from the last privilege check.
        """
        from gateway.rules.check import check_rules  # only this operation reads rule files anew

        principal.check_database(database)
        state = self.state
        target = state.target(database)
        rules = state.ruleset(database)
        folder = state.settings.rules_dir
        problems = check_rules(folder, {database: await introspect(target, everything=True)})
        report = state.extras.get("privileges")
        privileges = report.details(database) if report is not None else []

        def where(path: Any) -> str:
            try:
                return str(Path(path).relative_to(folder))
            except ValueError:
                return str(path)

        def belongs(file: str) -> bool:
            path = Path(file)
            return path.parent == folder / database or path.stem == database

        return {
            "database": database,
            "files": [where(p) for p in rules.sources],
            "instructions": list(rules.instructions),
            "hidden_tables": sorted(rules.hidden_tables),
            "hidden_columns": sorted(rules.hidden_columns),
            "extra_functions": sorted(rules.extra_functions),
            "limits": {k: v for k, v in dataclasses.asdict(rules.limits).items() if v is not None},
            "required_conditions": [{"name": c.name, "applies_to": c.applies_to, "sql": c.sql,
                                     "message": c.message, "file": where(c.file) if c.file else "",
                                     "line": c.line} for c in rules.required_conditions],
            "result_checks": [dataclasses.asdict(c) for c in rules.result_checks],
            "problems": [{"file": where(p.file), "line": p.line, "message": p.message, "severity": p.severity}
                         for p in problems if belongs(p.file)],
            "privileges": privileges,
        }

    # --- conversations ----------------------------------------------------------------------------------

    async def conversation(self, q: Question) -> Thread | None:
        """``q``'s conversation with its earlier turns, opened before answering (pass it to :meth:`ask` or
        :meth:`ask_events`) so that ``unknown_conversation``, ``conversation_database_mismatch`` and
        ``store_not_configured`` raise before a stream starts. None: the question has no conversation (no
        store, or a question built without a client)."""
        return await open_thread(self.state, q)

    # --- guideline scopes: the shipped default, what is in force, the audit trail ------------------------

    async def reset_guideline(self, database: str | None = None, *, actor: str = "python") -> lifecycle.InForce:
        """Go back to the shipped default for ``database`` (None: global): its active version is retired, so
        it uses the global version or the shipped file. Recorded as a ``reset`` event."""
        return await lifecycle.reset(self.state, store_of(self.state.store), database, actor=actor)

    async def guideline_in_force(self, database: str | None = None) -> lifecycle.InForce:
        """Which guideline ``database`` uses now: its own version, the global one or the shipped file."""
        return await lifecycle.in_force(self.state, store_of(self.state.store), database)

    async def guideline_events(self, database: str | None = None, *, only_global: bool = False,
                               limit: int = 100) -> list[GuidelineEvent]:
        """Activations, rollbacks and resets, newest first."""
        return await guidelines.events(store_of(self.state.store).pool, database=database, only_global=only_global,
                                       limit=limit)

    # --- MCP: schema search and recorded answers (gateway.mcp) ------------------------------------------

    async def search_schema(self, database: str, query: str, *, limit: int = 20,
                            principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Tables, columns and stored values of ``database`` that match the words of ``query``.

        Only what the rules leave visible is searched (see :mod:`gateway.context.search`): a hidden table,
        column or value is never matched nor returned.
        """
        principal.check_database(database)
        state = self.state
        return await search_schema(state.schemas, state.settings.context, state.target(database),
                                   state.ruleset(database), query, limit=limit)

    async def rules_summary(self, database: str, *, principal: Principal = ANONYMOUS) -> str:
        """The DBA's notes and instructions for ``database`` as the LLM reads them (hidden names redacted)."""
        principal.check_database(database)
        state = self.state
        return await rules_summary(state.schemas, state.settings.context, state.target(database),
                                   state.ruleset(database))

    async def active_guideline(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The guideline questions on ``database`` use now: ``{"database", "version", "text"}``."""
        principal.check_database(database)
        state = self.state
        return await active_guideline(state.schemas, state.settings.context, state.target(database),
                                      state.ruleset(database), state.guidelines)

    async def answer(self, q: Question, on_attempt: OnAttempt | None = None) -> Answer:
        """:meth:`ask`, plus what ``POST /v1/ask`` does around it: the answer is audited in the store before
        it is returned (so feedback can name its request id) and its corrections are handed to the sink.

        ``on_attempt`` sees each attempt as soon as it is validated (progress for MCP clients).
        """
        state = self.state
        answer = await ask(state, q, on_attempt)
        await audit_answer(state.store, answer, q.evidence)
        await hand_over(state.corrections, corrections_of(answer, q))
        return answer


def _freeze_heap() -> None:
    """Move what exists once the first Gateway is open (modules, settings, pools, rules) out of the cyclic
    collector's reach, once per process.

    That heap (~200k objects: sqlglot, pydantic, the SDK ...) is static, yet every generation-2 collection
    walked it: ~95 ms each, about one per burst of 200 concurrent questions, all on the event loop. Frozen
    objects are still freed when their reference count drops; only cycles among them are never collected,
    which bounds the cost at what the first open held. Later Gateways (tests, the CLI reopening) add nothing.
    """
    if _heap["frozen"]:
        return
    _heap["frozen"] = True
    gc.collect()  # garbage of the start-up first, so that it is not frozen with the rest
    gc.freeze()
