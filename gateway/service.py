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
import functools
import gc
import secrets
import time
import typing
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from gateway import errors, safety
from gateway.auth import ALL_DATABASES, ANONYMOUS, Authenticator, Principal, Role, scopes
from gateway.auth.ownership import Owner, owner_of, reviews
from gateway.auth.scopes import Operation
from gateway.config.version import __version__
from gateway.context.build import prepare
from gateway.context.cache import SchemaCache
from gateway.context.search import active_guideline, describe_schema, rules_summary, search_schema
from gateway.context.sources import ExamplesSource, FileGuidelineSource, GuidelineSource, NoExamples
from gateway.execute import Targets
from gateway.execute.introspect import introspect
from gateway.learning import promote
from gateway.learning.corrections import CorrectionsSink, MemoryCorrections, hand_over
from gateway.learning.feedback import FeedbackIn, Verdict, audit_answer, store_of, submit
from gateway.learning.templates import match_question
from gateway.llm.client import open_llm
from gateway.magic import lifecycle
from gateway.magic.run import RunReport
from gateway.magic.wiring import open_feedback_store, run_scheduler, store_sources
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.pipeline import Answer, Question, Thread, ask, ask_events, corrections_of, llm_for, open_thread
from gateway.pipeline.loop import ask_template
from gateway.pipeline.token_budget import check as check_token_budget
from gateway.pipeline.trusted import checked_values
from gateway.pipeline.trusted import domain as trusted_domain
from gateway.pipeline.trusted import forget as forget_templates
from gateway.pipeline.trusted import templates_of as trusted_templates
from gateway.pipeline.verified import OnAttempt
from gateway.rules import RulesRegistry
from gateway.rules.grants import PrivilegeReport, report_privileges
from gateway.rules.last_good import default_state_dir
from gateway.semantic.compile import MetricQuery
from gateway.serving.backpressure import RateLimits
from gateway.serving.shared_limits import SharedRateLimits
from gateway.settings import Settings
from gateway.sql import masking, row_policy
from gateway.sql.client import SqlOutcome, allowed_now, check_sql, run_client_sql, verdict_view
from gateway.state import GatewayState, policy_of
from gateway.store import Store, guidelines, regressions
from gateway.store import templates as templates_store
from gateway.store.changes import ChangeFeed
from gateway.store.examples import ExampleStatus
from gateway.store.feedback import StoredFeedback
from gateway.store.guidelines import GuidelineEvent, GuidelineVersion
from gateway.store.pool import store_faults
from gateway.store.regressions import StoredReport

if typing.TYPE_CHECKING:  # for the CLI and eval block at the end of Gateway
    from collections.abc import Callable
    from typing import Literal

    from gateway.context.model import Guideline
    from gateway.execute import QueryResult
    from gateway.execute.introspect import Schema
    from gateway.execute.privileges import Column, Exposure
    from gateway.llm.client import LLMClient
    from gateway.magic.replay import RegressionReport, Variant
    from gateway.magic.verified import VerifiedItem
    from gateway.pipeline.respond import Attempt as Attempt  # re-exported: an answer's attempts, for eval
    from gateway.rules.grants import PrivilegeProblem
    from gateway.rules.loading import RuleProblem
    from gateway.settings import AskPolicy, DatabaseSettings
    from gateway.store.api_keys import StoredKey
    from gateway.store.examples import ExampleStatus, StoredExample

if TYPE_CHECKING:
    from gateway.auth.signin import ConsoleSignIn
    from gateway.semantic import SemanticRegistry
    from gateway.settings import OidcSettings

# What adapters hand on to their clients, the types the operations return and their wire encodings, named
# here so that an entry point imports the gateway's face and nothing below it (tests/test_architecture.py).
from gateway.execute import QueryResult  # noqa: E402
from gateway.execute.values import dumps as dump_json  # noqa: E402
from gateway.pipeline import Attempt  # noqa: E402
from gateway.pipeline.respond import sse, to_json  # noqa: E402

__all__ = ["Answer", "Attempt", "Gateway", "GuidelineVersion", "QueryResult", "Question", "Schema", "SqlOutcome",
           "StoredExample", "Thread", "dump_json", "sse",
           "to_json"]

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
        """Open each resource, then build the one frozen :class:`GatewayState` that holds them all."""
        settings = self.settings
        safety.check(_WARM_UP_SQL)
        targets = await Targets.open(settings)
        stack.push_async_callback(targets.close)
        schemas = SchemaCache(settings.context, prepare)
        stack.push_async_callback(schemas.close)  # schema refreshes in flight end before their pools
        # DBA rules, reloaded when their files change; the last good set of each is saved for the next start
        rules = RulesRegistry(settings.rules_dir, modes={n: d.rules for n, d in settings.databases.items()},
                              state_dir=settings.rules_state_dir or default_state_dir(settings.rules_dir))
        for name in targets.by_name:  # loaded now: start-up says what is served, and the good sets are saved
            rules.status(name)
        semantic: SemanticRegistry | None = None
        if settings.semantic_dir is not None:  # metrics, dimensions, synonyms; reloaded like the rules
            from gateway.semantic import SemanticRegistry

            saved = (settings.rules_state_dir or default_state_dir(settings.rules_dir)) / "semantic"
            semantic = SemanticRegistry(settings.semantic_dir, state_dir=saved)
            stack.callback(semantic.close)
        # database errors lose hidden names as they become errors
        masking.install(targets.by_name, functools.partial(policy_of, targets, rules))
        store: Store | None = None  # opened below; the authenticator and the limits look it up when asked
        auth = Authenticator(settings.auth, lambda: store)  # API keys, looked up in the store
        stack.push_async_callback(auth.aclose)  # its connections to the authorization server, if any
        # per key (or address), in memory per process; with backpressure.shared, key and user buckets in the store
        rate_limits = (SharedRateLimits(settings.backpressure, lambda: store)
                       if settings.backpressure.shared else RateLimits(settings.backpressure))
        # None when no endpoint is configured: asking then answers llm_not_configured
        llm = await stack.enter_async_context(open_llm(settings.llm))
        store = await stack.enter_async_context(open_feedback_store(settings))  # store.dsn: feedback, MAGIC

        def forget_store() -> None:  # on close, key and limit lookups stop reaching the store before it closes
            nonlocal store
            store = None

        stack.callback(forget_store)
        guidelines: GuidelineSource = FileGuidelineSource(settings.guidelines_dir)
        examples: ExamplesSource = NoExamples()
        corrections: CorrectionsSink = MemoryCorrections()
        changes: ChangeFeed | None = None
        if store is not None:
            # approved examples are re-checked against the rules in force when used (cached per policy)
            guidelines, examples, corrections = store_sources(
                store, guidelines, lambda database, sql: allowed_now(state, database, sql))
            # what other replicas change reaches this one within a second (started below)
            changes = ChangeFeed(settings.store, functools.partial(_changed, auth, guidelines))
        state = GatewayState(settings=settings, targets=targets, schemas=schemas, guidelines=guidelines,
                             examples=examples, corrections=corrections, llm=llm, rules=rules, semantic=semantic,
                             store=store, auth=auth, rate_limits=rate_limits, changes=changes)
        await stack.enter_async_context(run_scheduler(state))  # MAGIC's regeneration, when configured
        if changes is not None:
            await changes.start()
            stack.push_async_callback(changes.close)
        await report_privileges(state)  # a role that can read hidden columns or write: log, metric, readiness
        await _load_relations(state)
        if settings.context.warm_start:  # in the background: serving starts now, /readyz tells the progress
            await state.schemas.warm(targets.by_name.values(), state.ruleset)
        self._state = state
        _freeze_heap()
        log.info("gateway_started", databases=sorted(targets.by_name), version=__version__)
        stack.callback(log.info, "gateway_stopping")

    @property
    def _live(self) -> GatewayState:
        """The open resources, for the operations below only: adapters call the operations (an architecture
        test keeps them off it). Raises when the gateway is not open."""
        if self._state is None:
            raise RuntimeError("the Gateway is not open: use `async with Gateway(settings) as gw:`")
        return self._state

    # --- scopes ---------------------------------------------------------------------------------------

    def permits(self, principal: Principal, operation: Operation) -> bool:
        """True when the principal's access token (if any) grants ``operation`` (see gateway.auth.scopes)."""
        return scopes.permits(principal, operation, self.settings.auth.oidc)

    def check_scope(self, principal: Principal, operation: Operation) -> None:
        """Raise ``insufficient_scope`` when the principal's access token does not grant ``operation``. Every
        operation below calls it first; adapters call it too when they must refuse before parsing a request
        (MCP over HTTP answers 403 with a ``WWW-Authenticate`` challenge a client can step up from)."""
        scopes.check(principal, operation, self.settings.auth.oidc)

    # --- databases and schema -------------------------------------------------------------------------

    def databases(self, principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """The target databases this principal may use: ``name``, ``description``, ``max_rows`` and
        ``statement_timeout_ms`` each, in configuration order."""
        self.check_scope(principal, Operation.SCHEMA)
        return [
            {"name": t.name, "description": t.settings.description, "max_rows": t.settings.limits.max_rows,
             "statement_timeout_ms": t.settings.limits.statement_timeout_ms}
            for t in self._live.targets.by_name.values() if principal.may_use(t.name)
        ]

    async def schema(self, database: str, *, tables: Sequence[str] | None = None, detail: str = "auto",
                     limit: int = 100, offset: int = 0, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """One page of tables with columns, types, keys and comments; what the rules hide is left out, and so
        is what the principal's Postgres role may not read (the context stage's cached view of the schema,
        gateway.context.search.describe_schema: no introspection per call).

        ``tables``: only these (by name, or ``schema.name``); unknown names are simply absent. ``detail``:
        ``tables`` (names, kinds, comments: a first look at a large database), ``full``, or ``auto`` (full for
        a page of at most 50 tables). ``limit`` tables from ``offset``; the answer's ``next_offset`` pages on.
        Raises ``unknown_database``, ``forbidden`` (not in the principal's list), ``unknown_pg_role`` or
        ``database_unavailable``.
        """
        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self._live
        return await describe_schema(state.schemas, state.settings.context, state.target(database),
                                     state.ruleset(database), tables=list(tables) if tables else None,
                                     detail=detail, limit=limit, offset=offset, role=principal.pg_role)

    async def starters(self, database: str, *, principal: Principal = ANONYMOUS) -> list[dict[str, str]]:
        """Starter questions for ``database`` (see :mod:`gateway.learning.starters`): ``question`` and ``source`` each.
        Needs the ``ask`` scope and the database; a caller under a row policy gets none."""
        from gateway.learning.starters import starter_questions

        self.check_scope(principal, Operation.ASK)
        principal.check_database(database)
        self._live.target(database)  # unknown_database
        return [s.as_dict() for s in await starter_questions(self._live, database, role=principal.pg_role,
                                                             claims=principal.claims)]

    def about(self, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """What an operator checks first: ``version``, ``started_at`` and ``uptime_s``, whether a store is
        configured, and the LLM: ``model`` and, for a dba or admin only, ``endpoint`` (scheme, host and port
        of ``llm.base_url``: never a path, user or password; an internal host name is not an analyst's
        business). ``llm`` is null when none is configured. ``latency``: this process's API latency per
        10 s, the last ten minutes (:mod:`gateway.observability.latency`)."""
        from urllib.parse import urlsplit

        from gateway.auth import Role

        self.check_scope(principal, Operation.SCHEMA)
        state = self._live
        started = state.started_at
        llm = state.settings.llm
        out_llm: dict[str, Any] | None = None
        if state.llm is not None:
            out_llm = {"model": llm.model, "endpoint": None}
            if principal.role.allows(Role.DBA):
                parts = urlsplit(llm.base_url or "https://api.openai.com/v1")
                port = f":{parts.port}" if parts.port else ""
                out_llm["endpoint"] = f"{parts.scheme}://{parts.hostname}{port}" if parts.hostname else None
        from gateway.observability.latency import HISTORY

        return {"version": __version__, "started_at": datetime.fromtimestamp(started, UTC).isoformat(),
                "uptime_s": round(time.time() - started, 1), "store": state.store is not None, "llm": out_llm,
                "latency": HISTORY.points()}

    # --- answer history (the console's history and permalinks) ------------------------------------------

    async def history(self, *, limit: int = 50, principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """The principal's own latest audited answers, newest first (question, database, status, SQL, when;
        never rows). Raises ``store_not_configured`` without a store."""
        from gateway.learning import history

        self.check_scope(principal, Operation.ASK)
        return await history.recent(self._live, principal, limit)

    async def audited_answer(self, request_id: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """One audited answer by request id, for its owner, or a dba/admin of its database without row-policy
        values (see :mod:`gateway.learning.history`); ``unknown_request`` for anyone else, as for an unknown id."""
        from gateway.learning import history

        self.check_scope(principal, Operation.ASK)
        return await history.one(self._live, principal, request_id)

    # --- SQL a client wrote ---------------------------------------------------------------------------

    def check(self, sql: str, database: str | None = None, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The safety verdict for ``sql`` under ``database``'s policy (hidden names masked), without running it.

        Returns ``{"allowed", "statement_kind", "codes", "findings"}`` (findings as
        :meth:`gateway.findings.Finding.as_dict`). Without ``database`` the SQL is checked under each
        configured database the principal may use, and allowed only when every one of them allows it (else
        the first refusing database's verdict); the default policy applies only when it may use none. A
        refusal is a verdict, not an exception; ``sql_too_large`` and ``unknown_database`` raise.
        """
        self.check_scope(principal, Operation.QUERY)
        if database is not None:
            principal.check_database(database)
            verdict, executed = self._check_for(sql, database, principal)
            view = verdict_view(self._live, verdict, database)
            if executed is not None:
                view["executed_sql"] = executed
            return view
        # The default policy knows no rules: it would call a hidden column allowed that /v1/sql then refuses
        # on the one database the key has. "Allowed" without a database means allowed wherever it may be run.
        found: safety.Verdict | None = None
        judged_by: str | None = None
        for name in self._live.targets.by_name:
            if principal.may_use(name):
                (found, _), judged_by = self._check_for(sql, name, principal), name
                if not found.allowed:
                    break
        if found is None:
            found = check_sql(self._live, sql, None)
        return verdict_view(self._live, found, judged_by)

    def _check_for(self, sql: str, database: str, principal: Principal) -> tuple[safety.Verdict, str | None]:
        """The verdict on what would run on ``database`` for ``principal``, and that text when the rules'
        row filters rewrote it. Relations not loaded yet (no query ran) count as unknown, so the answer errs
        towards refusing."""
        verdict = check_sql(self._live, sql, database)
        refused = row_policy.explain_refused(sql, principal.claims, verdict)
        if refused is not None:
            return refused, None
        if not verdict.allowed or not row_policy.has_row_filters(self._live, database):
            return verdict, None
        run = row_policy.filter_with(self._live, database, sql, principal.claims,
                                     row_policy.cached_relations(self._live, database))
        return run.verdict, (run.sql if run.rewritten and run.verdict.allowed else None)

    async def sql(self, database: str, sql: str, *, max_rows: int | None = None,
                  principal: Principal = ANONYMOUS) -> SqlOutcome:
        """Check ``sql`` and run exactly that text read-only, as the principal's Postgres role.

        Returns the verdict, the result (``columns``, ``rows``, ``row_count``, ``truncated``; at most
        ``max_rows`` rows, lowered by the database's limits and rules) and the timings. Raises a
        :class:`~gateway.errors.GatewayError` otherwise: ``sql_blocked`` (with the findings),
        ``query_error`` / ``statement_timeout`` ... (with the SQLSTATE), ``unknown_database``, ``forbidden``.
        """
        self.check_scope(principal, Operation.QUERY)
        principal.check_database(database)
        return await run_client_sql(self._live, database, sql, max_rows, role=principal.pg_role,
                                    principal=principal.partition, claims=principal.claims)

    # --- questions ------------------------------------------------------------------------------------

    def owner(self, principal: Principal = ANONYMOUS, client: str | None = None) -> Owner:
        """Who owns what ``principal`` leaves behind (answers, feedback, conversations, limits): the end user,
        else the API key, else ``client`` (the ``X-Client-Id`` header, auth off) or ``anonymous``. Every
        adapter asks here (see :mod:`gateway.auth.ownership`)."""
        return owner_of(principal, client)

    def question(self, database: str, question: str, *, evidence: str | None = None, max_rows: int | None = None,
                 request_id: str | None = None, principal: Principal = ANONYMOUS,
                 conversation_id: str | None = None, client: str | None = None) -> Question:
        """A question as the pipeline takes it, after the principal's access is checked; pass it to
        :meth:`ask` or :meth:`ask_events`.

        ``evidence``: domain knowledge that helps answer; ``max_rows``: a lower row cap for the answer;
        ``request_id``: the id under which the answer is audited and feedback names it (a random one when
        not given; the HTTP API always passes one it generated, never one a client chose). The answer belongs to
        its owner (:meth:`owner`: the end user, else the API key; without either, ``client``, an
        ``X-Client-Id``-like name, or ``anonymous``): only the owner may give feedback on it or continue its
        conversation (``conversation_id``; without it the answer starts a new one). Fails with
        ``llm_not_configured`` up front when no LLM can answer (unless verified examples or templates may).
        """
        self.check_scope(principal, Operation.ASK)
        principal.check_database(database)
        state = self._live
        state.ruleset(database)  # rules_unavailable now, not once a stream has begun
        # Without an LLM, verified examples (store.exact_match_answers) or templates may still answer: the
        # question then fails with llm_not_configured only once neither did.
        if not (state.settings.store.exact_match_answers
                or (state.settings.templates.answer_questions and state.store is not None)):
            llm_for(state, state.target(database))
        owner = owner_of(principal, client)
        return Question(database, question, evidence, max_rows, request_id or secrets.token_hex(16),
                        role=principal.pg_role,
                        conversation_id=conversation_id, client=owner.id, end_user=owner.end_user, via=owner.via,
                        claims=principal.claims)

    async def ask(self, q: Question, thread: Thread | None = None) -> Answer:
        """Answer a question: generate, check, execute, validate and reflect (see :mod:`gateway.pipeline`);
        the answer is a turn of ``q``'s conversation (``thread``, when :meth:`conversation` opened it).

        The :class:`~gateway.pipeline.Answer` has the ``status`` (``ok``, ``suspicious``, ``failed``,
        ``blocked``, ``needs_clarification``), the chosen attempt and every attempt with its findings, and the
        ``stop_reason``; ``answer.as_dict()`` is the ``POST /v1/ask`` body. Raises ``llm_unavailable``,
        ``llm_bad_output`` or ``deadline_exceeded`` when no attempt produced SQL to show.
        """
        return await ask(self._live, q, thread=thread)

    def ask_events(self, q: Question, answers: list[Answer],
                   thread: Thread | None = None) -> AsyncIterator[tuple[str, Any]]:
        """``("attempt", ...)`` per validated attempt (and ``("candidates", ...)`` with ``ask.candidates`` > 1),
        then ``("answer", ...)``; the answer is appended to ``answers``. Closing the iterator cancels the
        question."""
        return ask_events(self._live, q, answers, thread)

    # --- feedback and guidelines ----------------------------------------------------------------------

    async def feedback(self, request_id: str, verdict: Verdict, *, corrected_sql: str | None = None,
                       note: str | None = None, principal: Principal = ANONYMOUS,
                       client: str | None = None) -> tuple[StoredFeedback, bool]:
        """Store a verdict (and corrected SQL) on an answer; ``True`` when it was new. Committed first.

        The answer is named by its audited ``request_id`` and must be the caller's own (:meth:`owner` of
        ``principal`` and ``client``): anyone else's answers ``unknown_request``, as an id never audited does.
        A ``corrected_sql`` must pass the safety check and run as the principal's Postgres role. Feedback
        from an authenticated dba or admin approves its example at once. Raises ``store_not_configured``,
        ``unknown_request``, ``correction_blocked`` or ``feedback_conflict`` (the same owner already said
        something else). A token needs a feedback scope (``auth.oidc.feedback_scopes``).
        """
        self.check_scope(principal, Operation.FEEDBACK)
        item = FeedbackIn(request_id=request_id, owner=owner_of(principal, client), verdict=verdict,
                          corrected_sql=corrected_sql, note=note, may_use=principal.may_use,
                          pg_role=principal.pg_role, claims=principal.claims, reviewer=reviews(principal))
        return await submit(store_of(self._live.store), self._live, item)

    async def guidelines(self, database: str | None = None, *, only_global: bool = False) -> list[GuidelineVersion]:
        """Guideline versions (active, candidates, retired) with provenance: all, ``database``'s own, or only
        the global ones."""
        return await guidelines.list_all(store_of(self._live.store).pool, database=database, only_global=only_global)

    async def guideline(self, version: int) -> GuidelineVersion:
        """One guideline version; ``unknown_guideline_version`` when there is none with that number."""
        return await lifecycle.get(store_of(self._live.store), version)

    async def regenerate(self, *, activate: bool | None = None, database: str | None = None,
                         principal: Principal | None = None) -> RunReport:
        """Run MAGIC over the corrections not yet used (only ``database``'s, making a candidate for it; all,
        making a global candidate, without); returns the run's report.

        ``activate``: activate a new version that passes the gate (``None``: as ``magic.auto_activate``
        says). Raises ``regeneration_running`` when another replica holds the lock, ``llm_not_configured``.
        ``principal``: who asks (:meth:`may_change_guidelines` decides; without one, trusted in-process code).
        """
        self._may_change(principal, database)
        with store_faults("the regeneration did not finish; run it again"):
            return await lifecycle.run_regeneration(self._live, store_of(self._live.store),
                                                    activate=activate, database=database)

    async def activate(self, version: int, *, force: bool = False, actor: str | None = None,
                       principal: Principal | None = None) -> GuidelineVersion:
        """Make ``version`` the active guideline of its scope (its database, or global). A candidate must first
        pass the regression replay (no verified question right before and wrong with it:
        ``guideline_regressed`` names each) and the activation gate (not worse on held-out verified examples)
        unless ``force``; ``guideline_gate_failed`` says why it did not. ``principal``: who asks (the version's
        scope is checked by :meth:`may_change_guidelines`; without one, trusted in-process code)."""
        store = store_of(self._live.store)
        with store_faults("the version was not activated"):
            if principal is not None:
                self._may_change(principal, (await lifecycle.get(store, version)).database)
            return await lifecycle.activate(self._live, store, version, force=force,
                                            actor=_actor(principal, actor))

    async def regressions(self, version: int, *, limit: int = 20) -> list[StoredReport]:
        """The regression replays of ``version`` (run before its activations), newest first:
        ``.report['regressions']`` names each question right before and wrong with it, with the reason and
        both SQLs; ``unknown_guideline_version`` when there is no such version."""
        store = store_of(self._live.store)
        await lifecycle.get(store, version)
        return await regressions.for_version(store.pool, version, limit=limit)

    async def rollback(self, version: int | None = None, *, database: str | None = None,
                       actor: str | None = None, principal: Principal | None = None) -> GuidelineVersion:
        """Activate ``version``, or the scope's previously active version (``database``; None: global), without
        the gate. ``principal``: who asks (:meth:`may_change_guidelines` decides on ``database``)."""
        self._may_change(principal, database)
        with store_faults("the version was not activated"):
            return await lifecycle.rollback(self._live, store_of(self._live.store), version,
                                            database=database, actor=_actor(principal, actor))

    # --- trusted answers: templates (gateway.learning.templates, gateway.learning.promote) ----------------------------

    async def create_template(self, database: str, name: str, *, sql: str | None = None,
                              parameters: Sequence[dict[str, Any]] = (), questions: Sequence[str] = (),
                              description: str = "", example_id: int | None = None,
                              principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Promote a verified example (``example_id``, approved) or a DBA's SQL to a template; committed before
        it returns. ``parameters``: ``[{"name", "column": "table.column", "default"}]``, ``$k`` in ``sql`` is
        the k-th; ``questions``: example questions with ``{name}`` slots (or spelling the defaults). Needs a dba
        or admin; raises ``template_invalid`` (what to change), ``template_value_invalid`` (a default),
        ``template_exists``, ``unknown_example``, ``forbidden``."""
        self.check_scope(principal, Operation.QUERY)
        principal.check_role(Role.DBA)
        principal.check_database(database)
        state = self._live
        state.ruleset(database)
        q = Question(database, name, request_id=secrets.token_hex(16), role=principal.pg_role,
                     claims=principal.claims)
        return await promote.create(state, store_of(state.store), q, name=name, sql=sql,
                                    parameters=[dict(p) for p in parameters], questions=list(questions),
                                    description=description, example_id=example_id,
                                    created_by=owner_of(principal).id if principal.user or principal.key_id
                                    else principal.name, may_use=principal.may_use)

    async def templates(self, database: str | None = None, *,
                        principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """The templates of ``database`` (all the principal may use without), by name: only those reading
        nothing the principal may not read. A dba or admin also sees who made them and when; a caller under a
        row policy sees no default values (they may spell another tenant's)."""
        self.check_scope(principal, Operation.SCHEMA)
        if database is not None:
            principal.check_database(database)
            self._live.target(database)
        names = [database] if database is not None else [n for n in self._live.targets.by_name if principal.may_use(n)]
        return await promote.listing(self._live, store_of(self._live.store), names, role=principal.pg_role,
                                     claims=principal.claims, full=principal.role.allows(Role.DBA))

    async def template(self, name: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """One template as :meth:`templates` shows it; ``unknown_template`` when the principal may not use it."""
        self.check_scope(principal, Operation.SCHEMA)
        template, row, dom = await promote.available(self._live, store_of(self._live.store), name,
                                                     may_use=principal.may_use, role=principal.pg_role,
                                                     claims=principal.claims)
        return promote.view(template, dom, full=principal.role.allows(Role.DBA), saved=row,
                            claims=bool(principal.claims))

    async def delete_template(self, name: str, *, principal: Principal = ANONYMOUS) -> None:
        """Delete a template (a dba or admin of its database); ``unknown_template`` when there is none."""
        self.check_scope(principal, Operation.QUERY)
        principal.check_role(Role.DBA)
        store = store_of(self._live.store)
        with store_faults("the template was not deleted"):
            row = await templates_store.get(store.pool, name)
            if row is None or not principal.may_use(row.database):
                raise errors.UnknownTemplate(f"there is no template {name!r}", template=name)
            async with store.transaction() as conn:
                await templates_store.delete(conn, name)
        forget_templates(self._live)

    async def run_template(self, name: str, values: dict[str, str] | None = None, *, max_rows: int | None = None,
                           request_id: str | None = None, principal: Principal = ANONYMOUS,
                           client: str | None = None, on_attempt: OnAttempt | None = None) -> Answer:
        """Answer with template ``name`` and ``values`` (its defaults for the rest), as the principal: its
        Postgres role and row policy apply, values are checked against its view of each column and bound as
        parameters. The answer is labelled ``trusted`` and audited (feedback may name its request id). Raises
        ``unknown_template``, ``template_value_invalid`` (with ``suggestions``), ``invalid_request``."""
        self.check_scope(principal, Operation.ASK)
        state = self._live
        template, _, dom = await promote.available(state, store_of(state.store), name, may_use=principal.may_use,
                                                   role=principal.pg_role, claims=principal.claims)
        full = principal.role.allows(Role.DBA)
        # Defaults only as the listing shows them (promote.view): never under a row policy, and on a table
        # whose rows depend on the reader, a dba's or admin's only.
        checked = checked_values(template, values or {}, dom, default_shown=lambda column: not principal.claims
                                 and (full or dom.shows_default(column)))
        owner = owner_of(principal, client)
        q = Question(template.database, template.question(checked), None, max_rows,
                     request_id or secrets.token_hex(16), role=principal.pg_role, client=owner.id,
                     end_user=owner.end_user, via=owner.via, claims=principal.claims)
        answer = await ask_template(state, q, template, checked, on_attempt)
        await audit_answer(state.store, answer, q)
        return answer

    async def template_suggestions(self, database: str | None = None, *, limit: int = 50,
                                   principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """Questions asked at least ``templates.suggest_min_asked`` times whose answers were marked correct or
        approved, with their counts, most asked first, leaving out those a template already answers: for a
        dba or admin to promote. A dba under a row policy is refused: the log holds every tenant's questions."""
        self.check_scope(principal, Operation.SCHEMA)
        principal.check_role(Role.DBA)
        if principal.claims:
            raise errors.Forbidden("the suggestions come from every tenant's questions; a caller under a row "
                                   "policy cannot read them")
        if database is not None:
            principal.check_database(database)
        state = self._live
        names = [database] if database is not None else [n for n in state.targets.by_name if principal.may_use(n)]
        with store_faults("the suggestions could not be read"):
            found = await templates_store.suggestions(store_of(state.store).pool, names,
                                                      min_count=state.settings.templates.suggest_min_asked,
                                                      limit=limit * 2)
        out: list[dict[str, Any]] = []
        for suggestion in found:
            dom = await trusted_domain(state, suggestion.database, principal.pg_role, principal.claims)
            known = await trusted_templates(state, suggestion.database)
            if match_question(suggestion.question, [t for t in known if dom.available(t)], dom.known,
                              dom.columns) is None:
                out.append(suggestion.as_dict())
        return out[:limit]

    # --- health -----------------------------------------------------------------------------------------

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether every database answers (and passes a ``fail`` privilege check), with the details."""
        state = self._live
        targets = list(state.targets.by_name.values())
        if not targets:  # serving nothing is not being ready
            return False, {"status": "unavailable", "databases": {},
                           "detail": "no database is configured: add a [databases.NAME] table with a dsn"}
        answers = await asyncio.gather(*(t.ping(timeout=1.0) for t in targets))
        results = {t.name: answer for t, answer in zip(targets, answers, strict=True)}
        report = state.privileges.latest
        if report is None or report.stale(state.ruleset):
            report = await report_privileges(state, log_each=False)  # bounded per database
        if report is None:
            report = PrivilegeReport()
        # Kinds of problem only, no role names: /readyz is public (the DBA's rules view names them).
        privileges = {t.name: report.public(t.name) for t in targets if t.settings.privilege_check != "off"}
        failing = [t.name for t in targets if t.settings.privilege_check == "fail" and privileges[t.name]]
        # Rules that cannot be read: a database served from its last good set is ready (with the reason);
        # one not served at all is not. Reasons in words, no paths and no hidden names: /readyz is public.
        statuses = {t.name: state.rules.status(t.name) for t in targets} if state.rules is not None else {}
        rules = {name: status.detail for name, status in statuses.items() if status.state != "ok"}
        unserved = [name for name, status in statuses.items() if status.state == "unavailable"]
        ready = all(v == "ok" for v in results.values()) and not failing and not unserved
        body: dict[str, Any] = {"status": "ok" if ready else "unavailable", "databases": results,
                                "privileges": privileges,
                                # How far each schema is read (introspection and sample values); not a
                                # condition of readiness: questions wait for it, /v1/sql never does.
                                "schemas": {t.name: state.schemas.progress(t.name) for t in targets}}
        if rules:
            body["rules"] = rules
        feed = state.changes
        if feed is not None:  # the store versions this replica serves: one behind the others lags
            body["changes"] = feed.report()
        return ready, body


    # --- rules in force (the console's Rules page; `rules check` over HTTP) --------------------------------

    async def rules(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The rules in force for ``database`` and what ``rules check`` finds in its files right now.

        Names what the rules hide, so only dba and admin keys reach it (gateway.auth.access). ``problems`` are
        the files' problems against the live schema (every table and column, readable or not); ``privileges``
        what the gateway's role may do beyond the rules, from the last privilege check.
        """
        from gateway.rules.check import check_rules  # only this operation reads rule files anew

        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self._live
        target = state.target(database)
        rules = state.ruleset(database)
        folder = state.settings.rules_dir
        problems = check_rules(folder, {database: await introspect(target, everything=True)})
        report = state.privileges.latest
        if report is not None and report.stale(state.ruleset):  # after a reload: the findings of the new rules
            report = await report_privileges(state, log_each=False)
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

    async def edit_rules(self, database: str, hidden_columns: Sequence[str], instructions: Sequence[str],
                         limits: dict[str, int], *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Replace ``database``'s console rule file (``rules/<database>/console.yaml``, see
        :mod:`gateway.rules.edit`) with these hidden columns, instructions and limits; returns :meth:`rules`.

        Only a dba or admin that may use the database and is not under a row policy (the rules are every
        tenant's), with a token's ``query`` scope, not only the read-only ``schema`` one (``forbidden``
        otherwise). Validated like ``rules check`` against the live schema together with the other rule
        files (``rules_invalid`` with the problems, nothing written); ``rules_read_only`` when the folder
        cannot be written. Audited: a log line, and a ``rules_edits`` row in the store when there is one.
        In force from the next question.
        """
        from gateway.auth import Role
        from gateway.rules import edit
        from gateway.store import rules_edits

        self.check_scope(principal, Operation.QUERY)  # a write: the read-only schema scope is not enough
        if not principal.role.allows(Role.DBA):
            raise errors.Forbidden("editing rules needs a dba or admin key")
        if principal.claims:
            raise errors.Forbidden("a caller under a row policy cannot edit the rules every tenant shares")
        principal.check_database(database)
        state = self._live
        target = state.target(database)
        folder = state.settings.rules_dir
        wanted = edit.RulesEdit(sorted({n.strip().lower() for n in hidden_columns if n.strip()}),
                                [i.strip() for i in instructions if i.strip()], dict(limits))
        shape = edit.shape_problems(wanted)
        if shape:
            raise errors.RulesInvalid("; ".join(shape), problems=[{"file": "", "line": 0, "message": m} for m in shape])
        before = edit.current(folder, database)
        text = edit.render(wanted, before)
        problems = edit.validate(folder, database, text, await introspect(target, everything=True))
        if problems:
            raise errors.RulesInvalid(
                "rules check rejects this edit: " + "; ".join(p.message for p in problems[:5]),
                problems=[{"file": p.file, "line": p.line, "message": p.message} for p in problems])
        path = edit.write(folder, database, text)
        actor = principal.owner  # user:<id>, key:<id> or name:<name>: who edited, whoever it is
        log.info("rules_edited", database=database, actor=actor, file=str(path), before=before.as_dict(),
                 after=wanted.as_dict())
        if state.store is not None:
            try:
                await rules_edits.record(state.store.pool, database=database, actor=actor, file=str(path),
                                         before=before.as_dict(), after=wanted.as_dict())
            except Exception as exc:  # noqa: BLE001 - the file is written; the log line above keeps the trail
                log.warning("rules_edit_not_recorded", database=database, error=repr(exc))
        if state.rules is not None:
            state.rules.status(database)  # reload now: the answer shows the rules in force
        return await self.rules(database, principal=principal)

    def console_rules(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """What the console's rule file of ``database`` holds now (dba or admin)."""
        from gateway.auth import Role
        from gateway.rules import edit

        self.check_scope(principal, Operation.SCHEMA)
        if not principal.role.allows(Role.DBA):
            raise errors.Forbidden("reading the console's rules needs a dba or admin key")
        principal.check_database(database)
        self._live.target(database)
        return edit.current(self.settings.rules_dir, database).as_dict()

    # --- the semantic layer: metrics, dimensions, synonyms (gateway.semantic) ----------------------------

    def semantic(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The database's semantic model as a client may see it: each metric with its type, synonyms, SQL
        definition and the dimensions it can be grouped by; metrics and dimensions that read what the rules
        hide are left out. Raises ``semantic_unavailable`` when the files are broken with no good model."""
        from gateway.semantic.view import visible

        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self._live
        policy = state.policy(database)
        model = state.semantic_model(database)
        status = state.semantic.status(database) if state.semantic is not None else None
        return {"database": database, "configured": state.semantic is not None and not model.is_empty(),
                "status": status.state if status is not None else "ok",
                **visible(model, policy.hidden_tables, policy.hidden_columns)}

    async def metric_query(self, database: str, query: MetricQuery, *, max_rows: int | None = None,
                           principal: Principal = ANONYMOUS) -> tuple[str, SqlOutcome]:
        """Compile ``query`` from the semantic model, then check and run the SQL exactly as :meth:`sql` does
        (safety check, the principal's Postgres role, row policies, limits). Returns the SQL and the outcome;
        ``semantic_query_invalid`` when the model cannot answer it."""
        from gateway.semantic.compile import SemanticQueryError, compile_query

        self.check_scope(principal, Operation.QUERY)
        principal.check_database(database)
        model = self._live.semantic_model(database)
        try:
            compiled = compile_query(model, query)
        except SemanticQueryError as exc:
            raise errors.SemanticQueryInvalid(str(exc), database=database) from exc
        return compiled.sql, await self.sql(database, compiled.sql, max_rows=max_rows, principal=principal)

    # --- conversations ----------------------------------------------------------------------------------

    async def conversation(self, q: Question) -> Thread | None:
        """``q``'s conversation with its earlier turns, opened before answering (pass it to :meth:`ask` or
        :meth:`ask_events`) so that ``unknown_conversation``, ``conversation_database_mismatch`` and
        ``store_not_configured`` raise before a stream starts. None: the question has no conversation (no
        store, or a question built without a client)."""
        return await open_thread(self._live, q)

    # --- guideline scopes: the shipped default, what is in force, the audit trail ------------------------

    async def reset_guideline(self, database: str | None = None, *, actor: str | None = None,
                              principal: Principal | None = None) -> lifecycle.InForce:
        """Go back to the shipped default for ``database`` (None: global): its active version is retired, so
        it uses the global version or the shipped file. Recorded as a ``reset`` event. ``principal``: who
        asks (:meth:`may_change_guidelines` decides)."""
        self._may_change(principal, database)
        with store_faults("the guideline was not reset"):
            return await lifecycle.reset(self._live, store_of(self._live.store), database,
                                         actor=_actor(principal, actor))

    async def guideline_in_force(self, database: str | None = None) -> lifecycle.InForce:
        """Which guideline ``database`` uses now: its own version, the global one or the shipped file."""
        return await lifecycle.in_force(self._live, store_of(self._live.store), database)

    async def shipped_guideline(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, str]:
        """The shipped guideline file ``database`` falls back to (``<guidelines_dir>/<database>.md``, else
        ``default.md``): ``database``, ``version`` (``default`` or ``file:<name>``) and ``text``. Works
        without a store; needs the database (the console's Guideline page shows it as "in force" when no
        stored version is active)."""
        from gateway.context.sources import FileGuidelineSource

        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        self._live.target(database)  # unknown_database
        found = await FileGuidelineSource(self.settings.guidelines_dir).active(database)
        return {"database": database, "version": found.version, "text": found.text}

    async def guideline_events(self, database: str | None = None, *, only_global: bool = False,
                               limit: int = 100) -> list[GuidelineEvent]:
        """Activations, rollbacks and resets, newest first."""
        return await guidelines.events(store_of(self._live.store).pool, database=database, only_global=only_global,
                                       limit=limit)

    # --- MCP: schema search and recorded answers (gateway.mcp) ------------------------------------------

    async def search_schema(self, database: str, query: str, *, limit: int = 20,
                            principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Tables, columns and stored values of ``database`` that match the words of ``query``.

        Only what the rules leave visible and the principal's Postgres role and row policy let it read is
        searched (see :mod:`gateway.context.search`): anything else is never matched nor returned.
        """
        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self._live
        return await search_schema(state.schemas, state.settings.context, state.target(database),
                                   state.ruleset(database), query, limit=limit, role=principal.pg_role,
                                   claims=principal.claims)

    async def rules_summary(self, database: str, *, principal: Principal = ANONYMOUS) -> str:
        """The DBA's notes and instructions for ``database`` as the LLM reads them (hidden names redacted)."""
        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self._live
        return await rules_summary(state.schemas, state.settings.context, state.target(database),
                                   state.ruleset(database), role=principal.pg_role, claims=principal.claims)

    async def active_guideline(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The guideline questions on ``database`` use now: ``{"database", "version", "text"}``."""
        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self._live
        return await active_guideline(state.schemas, state.settings.context, state.target(database),
                                      state.ruleset(database), state.guidelines, role=principal.pg_role,
                                      claims=principal.claims)

    def answers_questions(self) -> bool:
        """Whether questions can be answered at all: an LLM endpoint and a model (``llm.model``, or a
        database's ``ask.model``). MCP lists ``ask`` only then."""
        state = self._live
        return state.llm is not None and (state.settings.llm.model is not None or any(
            target.settings.ask.model for target in state.targets.by_name.values()))

    def serves_metrics(self) -> bool:
        """Whether a semantic layer is configured (``semantic_dir``): MCP lists ``list_metrics`` and
        ``query_metrics`` only then (a tool that can only fail is noise in the client's model's context)."""
        return self._live.semantic is not None

    async def answer(self, q: Question, on_attempt: OnAttempt | None = None, thread: Thread | None = None) -> Answer:
        """:meth:`ask`, plus what ``POST /v1/ask`` does around it: the answer is audited in the store before
        it is returned (so feedback can name its request id) and its corrections are handed to the sink.

        ``on_attempt`` sees each attempt as soon as it is validated (progress for MCP clients); ``thread``: the
        conversation, when the caller holds it (a reply to a clarification without a store, see
        :func:`gateway.pipeline.conversation.replying`).
        """
        state = self._live
        answer = await ask(state, q, on_attempt, thread)
        await audit_answer(state.store, answer, q)
        await hand_over(state.corrections, corrections_of(answer, q))
        return answer

    # --- the CLI and eval (gateway.cli.main, gateway.eval): trials, reference SQL, probes, the catalog ----------

    async def trial(self, database: str, question: str, *, evidence: str | None = None,
                    ask_policy: AskPolicy | None = None, guideline: Guideline | None = None,
                    llm: Callable[[LLMClient], LLMClient] | None = None) -> Answer:
        """Answer ``question`` on ``database`` as :meth:`ask` does, under a trial configuration, for ``eval run``:
        as trusted in-process code, with the database's ``limits.max_rows``, in no conversation, with nothing
        audited and no correction handed over (measuring must not teach the gateway or charge a budget).

        ``ask_policy``: the database's ask policy for this question (when to reflect, candidates ...);
        ``guideline``: the guideline every prompt reads instead of the one in force; ``llm``: wraps the LLM
        client for this question (eval's ``gold_first`` answers the generation call with the gold SQL). The
        trial shares every resource (pools, LLM client, caches) with the serving configuration, so trials of
        different configurations run side by side in one process. Raises ``unknown_database``.
        """
        from dataclasses import replace

        state = self._live
        target = state.target(database)
        view = state
        if ask_policy is not None:
            settings = target.settings.model_copy(update={"ask": ask_policy})
            view = replace(view, targets=Targets(by_name={**state.targets.by_name,
                                                          database: replace(target, settings=settings)}))
        if guideline is not None:
            view = replace(view, guidelines=_FixedGuideline(guideline))
        if llm is not None and view.llm is not None:
            view = replace(view, llm=llm(view.llm))
        return await ask(view, Question(database, question, evidence, target.settings.limits.max_rows))

    async def reference_query(self, database: str, sql: str) -> QueryResult:
        """Run trusted ``sql`` (eval's gold SQL, never a client's) on ``database`` through the guarded path
        (read-only transaction, statement timeout, ``limits.max_rows``) but without the safety check or a
        principal: in-process callers only, no adapter exposes it. Raises ``unknown_database``, the query's
        own errors and ``database_unavailable``."""
        from gateway.execute import run_query

        target = self._live.target(database)
        return await run_query(target, sql, max_rows=target.settings.limits.max_rows)

    async def ping(self, database: str, *, timeout: float = 5.0) -> str:
        """``"ok"`` when ``database`` answers within ``timeout`` seconds, else why not (a preflight's check).
        Raises ``unknown_database``."""
        return await self._live.target(database).ping(timeout=timeout)

    async def llm_problem(self, *, probe: bool = True) -> str | None:
        """Why questions cannot reach the LLM (no endpoint configured, or, with ``probe``, the endpoint does
        not answer a cheap request), or None."""
        llm = self._live.llm
        if llm is None:
            return ("no LLM endpoint configured: set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any "
                    "OpenAI-compatible server) and NL2SQL_LLM__MODEL")
        return await llm.unreachable() if probe else None

    async def add_dba_correction(self, database: str, question: str, *, incorrect_sql: str, corrected_sql: str,
                                 evidence: str = "", request_id: str | None = None) -> int:
        """Store a DBA's correction (a wrong SQL and the right one, verified and reviewed: ``eval
        --collect-corrections`` stores each wrong answer with its gold SQL); returns its id. Raises
        ``store_not_configured`` without a store."""
        from gateway.store import corrections

        return await corrections.add(store_of(self._live.store).pool, database=database, question=question,
                                     evidence=evidence, incorrect_sql=incorrect_sql, corrected_sql=corrected_sql,
                                     source="dba", verified=True, request_id=request_id)

    async def verified_items(self, databases: Sequence[str], *, limit: int) -> list[VerifiedItem]:
        """The verified set of ``databases`` (approved examples and templates, see :mod:`gateway.magic.verified`),
        at most ``limit``: what ``eval replay`` replays. Raises ``store_not_configured`` without a store."""
        from gateway.magic.verified import load_verified

        return await load_verified(store_of(self._live.store).pool, databases, limit=limit)

    async def replay_verified(self, items: Sequence[VerifiedItem], after: Variant, *,
                              concurrency: int = 2) -> RegressionReport:
        """Replay ``items`` under the configuration in force and under ``after`` (a guideline, model or rules
        change, see :mod:`gateway.magic.replay`), as trials: nothing audited, no correction, no answer ratios."""
        from gateway.magic.replay import IN_FORCE, replay

        return await replay(self._live, items, IN_FORCE, after, concurrency=concurrency)

    async def record_regression_report(self, report: dict[str, Any], *, subject: str, actor: str,
                                       guideline_version: int | None = None, database: str | None = None) -> int:
        """Keep a replay's report (console: Guideline, Regressions); passed when nothing regressed. Returns
        its id; ``store_not_configured`` without a store."""
        return await regressions.add(store_of(self._live.store).pool, report=report, subject=subject, actor=actor,
                                     passed=not report["regressions"], guideline_version=guideline_version,
                                     database=database)

    @staticmethod
    async def probe_database(database: DatabaseSettings, name: str, where: str) -> str | None:
        """Connect once to ``database``, opening nothing else: None when it answers, else why not, naming
        ``where`` it was configured (``serve --dsn`` stops on a wrong DSN rather than starting to retry)."""
        from gateway.execute.pool import probe

        return await probe(database, name, where)

    async def regenerate_by(self, trigger: str, *, activate: bool | None = None,
                            database: str | None = None) -> RunReport:
        """:meth:`regenerate`, with the run recorded as started by ``trigger`` (``cli`` for ``guideline
        regenerate``)."""
        return await lifecycle.run_regeneration(self._live, store_of(self._live.store), activate=activate,
                                                trigger=trigger, database=database)

    # Administration that needs only the store (``keys``, ``examples``): a store-only Gateway, opened without
    # target pools, LLM client or scheduler, so that it works while the databases or the LLM are down.

    @staticmethod
    async def migrate_store(settings: Settings, *, apply: bool = True) -> tuple[list[int], list[tuple[int, str, bool]]]:
        """``migrate``: apply the store's pending migrations (when ``apply``) and list every shipped one as
        (version, name, applied); works before any Gateway can open on the store. ``store_not_configured``
        without ``store.dsn``; any other failure is ``store_unavailable`` with the cause's text."""
        from gateway.store import migrate as migrations

        if not settings.store.dsn:
            raise errors.StoreNotConfigured("store.dsn is not set (NL2SQL_STORE__DSN)")
        password = settings.store.password.get_secret_value() if settings.store.password else None
        try:
            return await migrations.run(settings.store.dsn, password, apply=apply)
        except migrations.MigrationError as exc:
            raise errors.StoreUnavailable(str(exc)) from exc

    @classmethod
    @asynccontextmanager
    async def store_only(cls, settings: Settings) -> AsyncIterator[Gateway]:
        """A Gateway with only the feedback store open (migrated first when ``store.migrate_on_start``), for
        the administrative operations below; ``store_not_configured`` without ``store.dsn``."""
        from gateway.store import Store

        store = await Store.open(settings.store, apply_migrations=settings.store.migrate_on_start)
        gateway = cls(settings)
        gateway._state = GatewayState(settings=settings, targets=Targets(), store=store,
                                      schemas=SchemaCache(settings.context, prepare),
                                      guidelines=FileGuidelineSource(settings.guidelines_dir))
        try:
            yield gateway
        finally:
            gateway._state = None
            await store.close()

    async def create_key(self, name: str, role: Role, databases: Sequence[str],
                         pg_role: str | None = None) -> tuple[StoredKey, str]:
        """Create an API key; returns it as stored and its token, which is shown this once (the store keeps a
        hash of its secret). Raises ``ValueError`` (:class:`gateway.store.api_keys.DuplicateKeyName`) when an
        active key has this name."""
        from gateway.auth.keys import new_token
        from gateway.store import api_keys

        token = new_token()
        key = await api_keys.create(store_of(self._live.store).pool, key_id=token.key_id, name=name,
                                    role=role.value, databases=list(databases), pg_role=pg_role,
                                    secret_sha256=token.secret_sha256)
        return key, token.token

    async def api_keys(self, *, include_revoked: bool = True) -> list[StoredKey]:
        """Every key (never a secret), oldest first."""
        from gateway.store import api_keys

        return await api_keys.list_all(store_of(self._live.store).pool, include_revoked=include_revoked)

    async def revoke_key(self, key_id: str) -> StoredKey | None:
        """Revoke an active key (gateways refuse it within ``auth.cache_ttl_s``); None when no active key has
        this id."""
        from gateway.store import api_keys

        return await api_keys.revoke(store_of(self._live.store).pool, key_id)

    async def examples_by_status(self, status: ExampleStatus | None = None, database: str | None = None, *,
                                 limit: int = 100) -> list[StoredExample]:
        """Examples in one status (all when None), oldest first: the review queue reads top to bottom."""
        from gateway.store import examples

        return await examples.list_by_status(store_of(self._live.store).pool, status, database, limit=limit)

    async def review_example_as(self, example_id: int, decision: Literal["approved", "rejected"], *, reviewer: str,
                                note: str | None = None) -> StoredExample:
        """Approve or reject one example as ``reviewer`` (trusted in-process code: any database); returns it as
        stored. ``unknown_example``, ``example_already_reviewed``."""
        from gateway.learning.review import decide

        return await decide(store_of(self._live.store), example_id, decision, reviewer=reviewer, note=note,
                            may_use=lambda _: True)

    # The guideline versions as the store holds them, for ``guideline list|show|diff|rollback|reset|export`` on
    # a store-only Gateway: the scope (``database``; None: global) is taken as given, the caller checked it.

    async def stored_guideline_in_force(self, database: str | None = None) -> GuidelineVersion | None:
        """The stored version ``database`` uses (its own active one, else the global one), or globally the
        active global one; None when the shipped file is in force."""
        pool = store_of(self._live.store).pool
        return await guidelines.in_force(pool, database) if database is not None else await guidelines.active(pool)

    async def guideline_in_force_of(self, database: str | None = None) -> lifecycle.InForce:
        """:meth:`guideline_in_force` from the store and the shipped files, without a target database."""
        from gateway.context.sources import FileGuidelineSource

        return await lifecycle.in_force_from(store_of(self._live.store), database,
                                             FileGuidelineSource(self.settings.guidelines_dir))

    async def previous_guideline(self, database: str | None = None) -> GuidelineVersion | None:
        """The scope's version that was active before the current one (a rollback's target), or None."""
        return await guidelines.previous_active(store_of(self._live.store).pool, database)

    async def retire_guideline(self, database: str | None = None, *, actor: str) -> GuidelineVersion | None:
        """Retire the scope's active version (a ``reset`` event): what lies beneath is in force again.
        Returns the version retired, None when none was active."""
        return await guidelines.reset(store_of(self._live.store).pool, database, actor=actor)

    async def rollback_stored(self, version: int | None, *, database: str | None, actor: str) -> GuidelineVersion:
        """:meth:`rollback` with only the store open (the scope is not checked against the target databases)."""
        return await lifecycle.rollback_in_store(store_of(self._live.store), version, database=database, actor=actor)

    async def export_guidelines(self, directory: Path) -> list[Path]:
        """Write every version to ``directory``/magic-vNNNN.md (for review in git); returns the files."""
        return await lifecycle.export(store_of(self._live.store), directory)

    @staticmethod
    def statement_key(sql: str) -> str:
        """The key under which the gateway takes two statements for the same one (case, spacing and comments
        aside; literals exact): eval counts distinct attempts and stores one correction per wrong SQL by it."""
        from gateway.pipeline.generate import normalize_sql

        return normalize_sql(sql)

    # DBA tools (``rules check``, ``rules grants``): the whole catalog and the roles' privileges, which no
    # client of a running gateway sees; each opens only what it reads, for as long as it reads.

    @classmethod
    async def inspect_rules(cls, settings: Settings, database: str, folder: Path,
                            roles: Sequence[str | None]) -> tuple[Schema, list[PrivilegeProblem], list[RuleProblem]]:
        """What ``rules check`` compares ``folder``'s rule files of ``database`` with: its whole live schema,
        what each of ``roles`` (None: the login role) may read or do beyond the rules (unless the database's
        ``privilege_check`` is off), and row filters without row level security behind them. Raises the
        database's error (``database_unavailable`` ...)."""
        from gateway.execute.rls import table_rls
        from gateway.rules.check import rls_problems
        from gateway.rules.grants import check_target
        from gateway.rules.loading import load_ruleset, rule_files

        only = settings.model_copy(update={"databases": {database: settings.databases[database]}})
        targets = await Targets.open(only)
        try:
            target = targets.by_name[database]
            schema = await introspect(target, everything=True)
            rules, _ = load_ruleset(database, rule_files(folder, database))
            checked = target.settings.privilege_check != "off"
            privileges = await check_target(target, rules, list(roles)) if checked else []
            rls: list[RuleProblem] = []
            for role in roles:
                facts = await table_rls(target, sorted(rules.row_filters), role)
                rls += rls_problems(rules.row_filters, facts, role)
            return schema, privileges, rls
        finally:
            await targets.close()

    @staticmethod
    async def login_role(dsn: str, password: str | None = None) -> str:
        """The role ``dsn`` logs in as (``rules grants``' grantee when no --role is given)."""
        from gateway.execute.privileges import login_role

        return await login_role(dsn, password)

    @staticmethod
    async def run_admin_script(admin_dsn: str, sql: str) -> None:
        """Run a generated grants script as the admin role of ``admin_dsn`` (``rules grants --apply``)."""
        from gateway.execute.privileges import run_admin_script

        await run_admin_script(admin_dsn, sql)

    @staticmethod
    async def admin_exposure(admin_dsn: str, role: str, columns: list[Column]) -> Exposure:
        """Which of ``columns`` ``role`` can still read, and from where (checked after ``--apply``)."""
        from gateway.execute.privileges import admin_exposure

        return await admin_exposure(admin_dsn, role, columns)

    @classmethod
    async def read_catalog(cls, settings: Settings, database: str, *, everything: bool = False) -> Schema:
        """The live schema of one configured database, with only that database's pool opened (no store, LLM
        or rules): what ``init`` writes its starter rules from and ``semantic check`` checks a model against.
        ``everything``: also what the rules hide (a DBA tool's view, never a client's)."""
        only = settings.model_copy(update={"databases": {database: settings.databases[database]}})
        targets = await Targets.open(only)
        try:
            return await introspect(targets.by_name[database], everything=everything)
        finally:
            await targets.close()

    # --- the one front door (issue 26): what the HTTP routes, the console and MCP used to take from the
    # resources themselves. Adapters call only these and the operations above (tests/test_architecture.py).

    def serving_state(self) -> GatewayState:
        """The open resources for the server plumbing that runs before any route (the app's lifespan, the
        authenticating middleware, the fast paths). Routes, the console API and MCP tools may not use it."""
        return self._live

    def auth_enabled(self) -> bool:
        """Whether callers must authenticate (``auth.enabled``); raises when access control is not set up."""
        return self._authenticator().settings.enabled

    def oidc(self) -> OidcSettings | None:
        """The ``[auth.oidc]`` settings (OAuth access tokens and their challenges); None without them or
        while the gateway is not open."""
        state = self._state
        auth = state.auth if state is not None else None
        return auth.settings.oidc if auth is not None else None

    async def console_sign_in(self) -> ConsoleSignIn | None:
        """How the console signs in with the identity provider (None: API keys only); raises
        ``identity_provider_unavailable`` while its metadata cannot be read."""
        from gateway.auth.signin import console_sign_in

        state = self._state
        return await console_sign_in(state.auth if state is not None else None)

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal an ``Authorization`` header value names (``unauthorized``, ``invalid_token`` ...)."""
        return await self._authenticator().authenticate(authorization)

    async def admit(self, principal: Principal, address: str) -> None:
        """Spend a token of the principal's rate limits (``address``: the bucket with auth off);
        ``too_many_requests`` when they are spent. Nothing when no limit is configured."""
        limits = self._live.rate_limits
        if limits is not None and limits.enabled:
            await limits.admit(principal, address)

    def whoami(self, principal: Principal) -> dict[str, Any]:
        """The caller's own identity as the console shows it; nothing about other keys."""
        state = self._live
        auth = state.auth
        return {"name": principal.name, "role": principal.role.value, "databases": sorted(principal.databases),
                "auth_enabled": bool(auth is not None and auth.settings.enabled), "user": principal.user,
                "client": principal.client,
                "scopes": None if principal.scopes is None else sorted(principal.scopes),
                "policy": principal.policy, "store": state.store is not None}

    def has_store(self) -> bool:
        """Whether a store is configured (``store.dsn``): templates, history, feedback and guidelines need it."""
        return self._live.store is not None

    def observe_pools(self) -> None:
        """Set the pool gauges from this process's pools (before a metrics scrape)."""
        metrics.observe_pools(self._live.targets.by_name.values())

    def max_attempts(self, database: str) -> int:
        """How many attempts a question on ``database`` may take at most (progress reports count to it)."""
        return 1 + self._live.target(database).settings.ask.max_iterations

    def reply_thread(self, q: Question, asked: str, clarification: dict[str, Any],
                     evidence: str | None = None) -> Thread:
        """A conversation held in memory whose one turn is the gateway's clarifying question about ``asked``:
        ``q``, the user's reply, is answered with it in view (see :func:`gateway.pipeline.conversation.replying`)."""
        from gateway.pipeline.conversation import replying

        return replying(q, asked, clarification, evidence)

    async def answer_audited(self, q: Question, thread: Thread | None = None) -> Answer:
        """:meth:`ask`, and the answer audited in the store before it is returned (feedback may follow at
        once); hand its corrections over with :meth:`hand_over` once the answer is out."""
        state = self._live
        answer = await ask(state, q, thread=thread)
        await audit_answer(state.store, answer, q)
        return answer

    async def answer_events(self, q: Question, answers: list[Answer],
                            thread: Thread | None = None) -> AsyncGenerator[tuple[str, Any], None]:
        """:meth:`ask_events` as a stream to a client: the owner's token budget is checked first (a spent one
        raises ``token_budget_exceeded`` here, before the stream starts), and the answer is audited before its
        ``answer`` event is yielded. Hand the corrections of ``answers`` over with :meth:`hand_over` after."""
        state = self._live
        await check_token_budget(state.store, state.settings.llm, q.client)
        return self._audited_events(q, answers, thread)

    async def _audited_events(self, q: Question, answers: list[Answer],
                              thread: Thread | None) -> AsyncGenerator[tuple[str, Any], None]:
        state = self._live
        events = ask_events(state, q, answers, thread)
        try:
            async for name, data in events:
                if name == "answer":
                    await audit_answer(state.store, answers[-1], q)
                yield name, data
        finally:  # closed with this stream (the client left): the question is cancelled now, not when collected
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    async def hand_over(self, q: Question, answers: Sequence[Answer]) -> None:
        """Give the corrections in ``answers`` to the corrections sink; errors are logged, never raised."""
        for answer in answers:
            await hand_over(self._live.corrections, corrections_of(answer, q))

    def may_change_guidelines(self, principal: Principal, database: str | None) -> bool:
        """Whether ``principal`` may change the guideline of ``database`` (None: the global one, which every
        database without its own version uses): a key that may use the database; for the global scope a key
        for every database (``*``) or an admin key, so a DBA of one database cannot change the others' prompts.
        The HTTP API, MCP and the Python API all ask here."""
        try:
            self._may_change(principal, database)
        except errors.Forbidden:
            return False
        return True

    def _may_change(self, principal: Principal | None, database: str | None) -> None:
        if principal is None:  # trusted in-process code (the CLI, the Python API without a principal)
            return
        principal.check_role(Role.DBA)  # as the HTTP routes require: a client key changes no guideline
        if database is not None:
            principal.check_database(database)
        elif principal.role is not Role.ADMIN and ALL_DATABASES not in principal.databases:
            raise errors.Forbidden(f"API key {principal.name!r} may only change the guidelines of its databases "
                                   f"({', '.join(sorted(principal.databases))}); the global guideline needs a key "
                                   "for every database or an admin key", key=principal.key_id)

    async def guideline_listing(self, database: str | None = None, *, only_global: bool = False,
                                principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The guideline versions the principal may see (``database``'s own, or the global ones with
        ``only_global``): ``active`` (the global active version, or ``database``'s in force), ``versions``
        (summaries), ``active_by_database`` (of the databases it may use) and ``in_force`` (with a database)."""
        if database is not None:
            principal.check_database(database)
        state = self._live
        store = store_of(state.store)
        with store_faults("the versions could not be read"):
            versions = await guidelines.list_all(store.pool, database=database, only_global=only_global)
            by_database = {db: v for db, v in (await guidelines.active_by_database(store.pool)).items()
                           if principal.may_use(db)}
            in_force = await lifecycle.in_force(state, store, database) if database is not None else None
            active = (in_force.version if in_force is not None
                      else (await lifecycle.in_force(state, store, None)).version)
        return {"active": active, "versions": [v.summary() for v in versions
                                               if v.database is None or principal.may_use(v.database)],
                "active_by_database": by_database, "in_force": in_force.as_dict() if in_force else None}

    async def guideline_event_list(self, database: str | None = None, *, only_global: bool = False,
                                   limit: int = 100, principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """Activations, rollbacks and resets the principal may see (of its databases and global), newest
        first."""
        if database is not None:
            principal.check_database(database)
        with store_faults("the events could not be read"):
            found = await guidelines.events(store_of(self._live.store).pool, database=database,
                                            only_global=only_global, limit=limit)
        return [e.as_dict() for e in found if e.database is None or principal.may_use(e.database)]

    async def guideline_view(self, version: int | GuidelineVersion, *,
                             principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """One guideline version (a number, or one an operation returned) as the principal may see it: its
        evaluation lists only the questions of databases it may use; ``forbidden`` for another database's."""
        if isinstance(version, int):
            with store_faults("the version could not be read"):
                version = await lifecycle.get(store_of(self._live.store), version)
            if version.database is not None:
                principal.check_database(version.database)
        return {**version.as_dict(), "evaluation": _visible_report(principal, version.evaluation)}

    async def regression_reports(self, version: int, *, limit: int = 20,
                                 principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """:meth:`regressions` as the principal may see them: summaries with the counts of the questions of its
        databases, the newest with its ``report`` (the others' ``report`` None). The verdict (passed,
        regressed) stays the whole replay's."""
        store = store_of(self._live.store)
        with store_faults("the reports could not be read"):
            found = await lifecycle.get(store, version)
            if found.database is not None:
                principal.check_database(found.database)
            reports = await regressions.for_version(store.pool, version, limit=limit)
        return [{**r.summary(), "counts": (_visible_report(principal, r.report) or {}).get("counts", {}),
                 "report": _visible_report(principal, r.report) if n == 0 else None}
                for n, r in enumerate(reports)]

    async def examples(self, status: ExampleStatus | None = None, database: str | None = None, *,
                       limit: int = 100, principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """Verified examples to review (dba or admin), of the databases the principal may use, each with the
        analyst's verdict and the original answer beside it (see :mod:`gateway.learning.review`)."""
        from gateway.learning.review import listing, with_context

        principal.check_role(Role.DBA)
        store = store_of(self._live.store)
        return await with_context(store, await listing(store, status, database, principal.may_use, limit))

    async def review_example(self, example_id: int, decision: Literal["approved", "rejected"], *,
                             note: str | None = None, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Approve or reject one example (dba or admin of its database); returns it as stored after."""
        from gateway.learning.review import decide

        principal.check_role(Role.DBA)
        decided = await decide(store_of(self._live.store), example_id, decision,
                               reviewer=owner_of(principal).id, note=note, may_use=principal.may_use)
        return decided.as_dict()

    def _authenticator(self) -> Authenticator:
        auth = self._live.auth
        if auth is None:  # an open Gateway always sets it; failing closed beats serving unauthenticated
            raise errors.GatewayError("access control is not initialised")
        return auth


def _actor(principal: Principal | None, actor: str | None) -> str:
    """Who changed a guideline, for its event: ``actor`` when given; else the end user (or API key) of
    ``principal``, or its name with auth off; ``python`` for trusted in-process code."""
    if actor is not None:
        return actor
    if principal is None:
        return "python"
    return principal.owner if principal.user is not None or principal.key_id is not None else principal.name


def _visible_report(principal: Principal, report: dict[str, Any] | None) -> dict[str, Any] | None:
    """An evaluation or regression report with only the questions of databases ``principal`` may use: a
    global version is replayed on every database's verified questions, and their SQL is no business of a DBA
    of one database. Counts are recomputed from what remains."""
    if report is None:
        return None
    out = dict(report)
    for key in ("items", "regressions"):
        if isinstance(out.get(key), list):
            out[key] = [i for i in out[key] if not isinstance(i, dict) or i.get("database") is None
                        or principal.may_use(i["database"])]
    if isinstance(out.get("counts"), dict) and isinstance(out.get("items"), list):
        counts = dict.fromkeys(out["counts"], 0)
        counts["replayed"] = len(out["items"])
        for item in out["items"]:
            counts[item["verdict"]] = counts.get(item["verdict"], 0) + 1
        out["counts"] = counts
    if "regressed" in out and isinstance(out.get("regressions"), list):
        out["regressed"] = len(out["regressions"])
    return out


async def _load_relations(state: GatewayState) -> None:
    """Load the relations of databases with row filters, so that ``check`` can judge before any query ran;
    best effort: a database that does not answer now is loaded by its first query."""
    for name in state.targets.by_name:
        if state.rules is not None and state.rules.status(name).state == "unavailable":
            continue  # not served (its rules cannot be read): readiness says why, requests get rules_unavailable
        if row_policy.has_row_filters(state, name):
            try:
                await row_policy.relations(state, name)
            except Exception as exc:  # noqa: BLE001 - start-up must not depend on a target database
                log.info("row_filter_relations_not_loaded", database=name, error=repr(exc))


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


def _changed(auth: Authenticator, guidelines: GuidelineSource, kind: str, detail: str) -> None:
    """Drop what this replica cached of a change another replica (or the CLI) made in the store."""
    if kind == "keys":
        auth.forget(detail or None)
    elif kind == "guidelines":
        invalidate = getattr(guidelines, "invalidate", None)
        if invalidate is not None:
            invalidate()
    log.info("store_change_applied", kind=kind, detail=detail or "all")


class _FixedGuideline:
    """A guideline source that always answers one guideline (a :meth:`Gateway.trial`'s)."""

    def __init__(self, guideline: Guideline) -> None:
        self.guideline = guideline

    async def active(self, database: str) -> Guideline:
        return self.guideline
