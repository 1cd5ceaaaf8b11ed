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
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from gateway import __version__, errors, masking, promote, row_policy, safety
from gateway.auth import ANONYMOUS, Authenticator, Principal, Role, scopes
from gateway.auth.scopes import Operation
from gateway.backpressure import RateLimits
from gateway.client_sql import SqlOutcome, check_sql, run_client_sql, verdict_view
from gateway.context.search import active_guideline, describe_schema, rules_summary, search_schema
from gateway.corrections import hand_over
from gateway.execute import Targets
from gateway.execute.introspect import introspect
from gateway.feedback import FeedbackIn, StoredFeedback, Verdict, audit_answer, store_of, submit
from gateway.llm import open_llm
from gateway.magic import lifecycle
from gateway.magic.run import RunReport
from gateway.magic.wiring import open_feedback_store
from gateway.observability.logging import get_logger
from gateway.ownership import Owner, owner_of, reviews
from gateway.pipeline import Answer, Question, Thread, ask, ask_events, corrections_of, llm_for, open_thread
from gateway.pipeline.loop import ask_template
from gateway.pipeline.trusted import checked_values
from gateway.pipeline.trusted import domain as trusted_domain
from gateway.pipeline.trusted import forget as forget_templates
from gateway.pipeline.trusted import templates_of as trusted_templates
from gateway.pipeline.verified import OnAttempt
from gateway.rules import RulesRegistry
from gateway.rules.grants import PrivilegeReport, report_privileges
from gateway.rules.last_good import default_state_dir
from gateway.semantic.compile import MetricQuery
from gateway.settings import Settings
from gateway.shared_limits import SharedRateLimits
from gateway.state import GatewayState
from gateway.store import guidelines, regressions
from gateway.store import templates as templates_store
from gateway.store.changes import ChangeFeed
from gateway.store.guidelines import GuidelineEvent, GuidelineVersion
from gateway.store.pool import store_faults
from gateway.store.regressions import StoredReport
from gateway.templates import match_question

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
        stack.push_async_callback(state.schemas.close)  # schema refreshes in flight end before their pools
        # DBA rules, reloaded when their files change; the last good set of each is saved for the next start
        state.rules = RulesRegistry(settings.rules_dir, modes={n: d.rules for n, d in settings.databases.items()},
                                    state_dir=settings.rules_state_dir or default_state_dir(settings.rules_dir))
        for name in targets.by_name:  # loaded now: start-up says what is served, and the good sets are saved
            state.rules.status(name)
        if settings.semantic_dir is not None:  # metrics, dimensions, synonyms; reloaded like the rules
            from gateway.semantic import SemanticRegistry

            saved = (settings.rules_state_dir or default_state_dir(settings.rules_dir)) / "semantic"
            state.semantic = SemanticRegistry(settings.semantic_dir, state_dir=saved)
            stack.callback(state.semantic.close)
        masking.install(targets.by_name, state.policy)  # database errors lose hidden names as they become errors
        state.auth = Authenticator(settings.auth, lambda: state.store)  # API keys, looked up in the store
        stack.push_async_callback(state.auth.aclose)  # its connections to the authorization server, if any
        # per key (or address), in memory per process; with backpressure.shared, key and user buckets in the store
        state.rate_limits = (SharedRateLimits(settings.backpressure, lambda: state.store)
                             if settings.backpressure.shared else RateLimits(settings.backpressure))
        # None when no endpoint is configured: asking then answers llm_not_configured
        state.llm = await stack.enter_async_context(open_llm(settings.llm))
        await stack.enter_async_context(open_feedback_store(state))  # store.dsn: feedback, guidelines, MAGIC
        if state.store is not None:  # what other replicas change reaches this one within a second
            feed = ChangeFeed(settings.store, functools.partial(_changed, state))
            await feed.start()
            stack.push_async_callback(feed.close)
            state.extras["changes"] = feed
        await report_privileges(state)  # a role that can read hidden columns or write: log, metric, readiness
        await _load_relations(state)
        state.extras["started_at"] = time.time()  # uptime on the console's Status page (GET /v1/about)
        if settings.context.warm_start:  # in the background: serving starts now, /readyz tells the progress
            await state.schemas.warm(targets.by_name.values(), state.ruleset)
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
            for t in self.state.targets.by_name.values() if principal.may_use(t.name)
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
        state = self.state
        return await describe_schema(state.schemas, state.settings.context, state.target(database),
                                     state.ruleset(database), tables=list(tables) if tables else None,
                                     detail=detail, limit=limit, offset=offset, role=principal.pg_role)

    async def starters(self, database: str, *, principal: Principal = ANONYMOUS) -> list[dict[str, str]]:
        """Starter questions for ``database`` (see :mod:`gateway.starters`): ``question`` and ``source`` each.
        Needs the ``ask`` scope and the database; a caller under a row policy gets none."""
        from gateway.starters import starter_questions

        self.check_scope(principal, Operation.ASK)
        principal.check_database(database)
        self.state.target(database)  # unknown_database
        return [s.as_dict() for s in await starter_questions(self.state, database, role=principal.pg_role,
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
        state = self.state
        started = float(state.extras.get("started_at", time.time()))
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
        from gateway import history

        self.check_scope(principal, Operation.ASK)
        return await history.recent(self.state, principal, limit)

    async def audited_answer(self, request_id: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """One audited answer by request id, for its owner, or a dba/admin of its database without row-policy
        values (see :mod:`gateway.history`); ``unknown_request`` for anyone else, as for an unknown id."""
        from gateway import history

        self.check_scope(principal, Operation.ASK)
        return await history.one(self.state, principal, request_id)

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
            view = verdict_view(self.state, verdict, database)
            if executed is not None:
                view["executed_sql"] = executed
            return view
        # The default policy knows no rules: it would call a hidden column allowed that /v1/sql then refuses
        # on the one database the key has. "Allowed" without a database means allowed wherever it may be run.
        found: safety.Verdict | None = None
        judged_by: str | None = None
        for name in self.state.targets.by_name:
            if principal.may_use(name):
                (found, _), judged_by = self._check_for(sql, name, principal), name
                if not found.allowed:
                    break
        if found is None:
            found = check_sql(self.state, sql, None)
        return verdict_view(self.state, found, judged_by)

    def _check_for(self, sql: str, database: str, principal: Principal) -> tuple[safety.Verdict, str | None]:
        """The verdict on what would run on ``database`` for ``principal``, and that text when the rules'
        row filters rewrote it. Relations not loaded yet (no query ran) count as unknown, so the answer errs
        towards refusing."""
        verdict = check_sql(self.state, sql, database)
        refused = row_policy.explain_refused(sql, principal.claims, verdict)
        if refused is not None:
            return refused, None
        if not verdict.allowed or not row_policy.has_row_filters(self.state, database):
            return verdict, None
        run = row_policy.filter_with(self.state, database, sql, principal.claims,
                                     row_policy.cached_relations(self.state, database))
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
        return await run_client_sql(self.state, database, sql, max_rows, role=principal.pg_role,
                                    principal=principal.partition, claims=principal.claims)

    # --- questions ------------------------------------------------------------------------------------

    def owner(self, principal: Principal = ANONYMOUS, client: str | None = None) -> Owner:
        """Who owns what ``principal`` leaves behind (answers, feedback, conversations, limits): the end user,
        else the API key, else ``client`` (the ``X-Client-Id`` header, auth off) or ``anonymous``. Every
        adapter asks here (see :mod:`gateway.ownership`)."""
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
        state = self.state
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
        return await ask(self.state, q, thread=thread)

    def ask_events(self, q: Question, answers: list[Answer],
                   thread: Thread | None = None) -> AsyncIterator[tuple[str, Any]]:
        """``("attempt", ...)`` per validated attempt (and ``("candidates", ...)`` with ``ask.candidates`` > 1),
        then ``("answer", ...)``; the answer is appended to ``answers``. Closing the iterator cancels the
        question."""
        return ask_events(self.state, q, answers, thread)

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
        pass the regression replay (no verified question right before and wrong with it:
        ``guideline_regressed`` names each) and the activation gate (not worse on held-out verified examples)
        unless ``force``; ``guideline_gate_failed`` says why it did not."""
        return await lifecycle.activate(self.state, store_of(self.state.store), version, force=force, actor=actor)

    async def regressions(self, version: int, *, limit: int = 20) -> list[StoredReport]:
        """The regression replays of ``version`` (run before its activations), newest first:
        ``.report['regressions']`` names each question right before and wrong with it, with the reason and
        both SQLs; ``unknown_guideline_version`` when there is no such version."""
        store = store_of(self.state.store)
        await lifecycle.get(store, version)
        return await regressions.for_version(store.pool, version, limit=limit)

    async def rollback(self, version: int | None = None, *, database: str | None = None,
                       actor: str = "python") -> GuidelineVersion:
        """Activate ``version``, or the scope's previously active version (``database``; None: global), without
        the gate."""
        return await lifecycle.rollback(self.state, store_of(self.state.store), version, database=database, actor=actor)

    # --- trusted answers: templates (gateway.templates, gateway.promote) ---------------------------------

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
        state = self.state
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
            self.state.target(database)
        names = [database] if database is not None else [n for n in self.state.targets.by_name if principal.may_use(n)]
        return await promote.listing(self.state, store_of(self.state.store), names, role=principal.pg_role,
                                     claims=principal.claims, full=principal.role.allows(Role.DBA))

    async def template(self, name: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """One template as :meth:`templates` shows it; ``unknown_template`` when the principal may not use it."""
        self.check_scope(principal, Operation.SCHEMA)
        template, row, dom = await promote.available(self.state, store_of(self.state.store), name,
                                                     may_use=principal.may_use, role=principal.pg_role,
                                                     claims=principal.claims)
        return promote.view(template, dom, full=principal.role.allows(Role.DBA), saved=row,
                            claims=bool(principal.claims))

    async def delete_template(self, name: str, *, principal: Principal = ANONYMOUS) -> None:
        """Delete a template (a dba or admin of its database); ``unknown_template`` when there is none."""
        self.check_scope(principal, Operation.QUERY)
        principal.check_role(Role.DBA)
        store = store_of(self.state.store)
        with store_faults("the template was not deleted"):
            row = await templates_store.get(store.pool, name)
            if row is None or not principal.may_use(row.database):
                raise errors.UnknownTemplate(f"there is no template {name!r}", template=name)
            async with store.transaction() as conn:
                await templates_store.delete(conn, name)
        forget_templates(self.state)

    async def run_template(self, name: str, values: dict[str, str] | None = None, *, max_rows: int | None = None,
                           request_id: str | None = None, principal: Principal = ANONYMOUS,
                           client: str | None = None, on_attempt: OnAttempt | None = None) -> Answer:
        """Answer with template ``name`` and ``values`` (its defaults for the rest), as the principal: its
        Postgres role and row policy apply, values are checked against its view of each column and bound as
        parameters. The answer is labelled ``trusted`` and audited (feedback may name its request id). Raises
        ``unknown_template``, ``template_value_invalid`` (with ``suggestions``), ``invalid_request``."""
        self.check_scope(principal, Operation.ASK)
        state = self.state
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
        state = self.state
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
        state = self.state
        targets = list(state.targets.by_name.values())
        if not targets:  # serving nothing is not being ready
            return False, {"status": "unavailable", "databases": {},
                           "detail": "no database is configured: add a [databases.NAME] table with a dsn"}
        answers = await asyncio.gather(*(t.ping(timeout=1.0) for t in targets))
        results = {t.name: answer for t, answer in zip(targets, answers, strict=True)}
        report = state.extras.get("privileges")
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
        feed = state.extras.get("changes")
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
        state = self.state
        target = state.target(database)
        rules = state.ruleset(database)
        folder = state.settings.rules_dir
        problems = check_rules(folder, {database: await introspect(target, everything=True)})
        report = state.extras.get("privileges")
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
        state = self.state
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
        self.state.target(database)
        return edit.current(self.settings.rules_dir, database).as_dict()

    # --- the semantic layer: metrics, dimensions, synonyms (gateway.semantic) ----------------------------

    def semantic(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The database's semantic model as a client may see it: each metric with its type, synonyms, SQL
        definition and the dimensions it can be grouped by; metrics and dimensions that read what the rules
        hide are left out. Raises ``semantic_unavailable`` when the files are broken with no good model."""
        from gateway.semantic.view import visible

        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self.state
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
        model = self.state.semantic_model(database)
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
        return await open_thread(self.state, q)

    # --- guideline scopes: the shipped default, what is in force, the audit trail ------------------------

    async def reset_guideline(self, database: str | None = None, *, actor: str = "python") -> lifecycle.InForce:
        """Go back to the shipped default for ``database`` (None: global): its active version is retired, so
        it uses the global version or the shipped file. Recorded as a ``reset`` event."""
        return await lifecycle.reset(self.state, store_of(self.state.store), database, actor=actor)

    async def guideline_in_force(self, database: str | None = None) -> lifecycle.InForce:
        """Which guideline ``database`` uses now: its own version, the global one or the shipped file."""
        return await lifecycle.in_force(self.state, store_of(self.state.store), database)

    async def shipped_guideline(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, str]:
        """The shipped guideline file ``database`` falls back to (``<guidelines_dir>/<database>.md``, else
        ``default.md``): ``database``, ``version`` (``default`` or ``file:<name>``) and ``text``. Works
        without a store; needs the database (the console's Guideline page shows it as "in force" when no
        stored version is active)."""
        from gateway.context.sources import FileGuidelineSource

        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        self.state.target(database)  # unknown_database
        found = await FileGuidelineSource(self.settings.guidelines_dir).active(database)
        return {"database": database, "version": found.version, "text": found.text}

    async def guideline_events(self, database: str | None = None, *, only_global: bool = False,
                               limit: int = 100) -> list[GuidelineEvent]:
        """Activations, rollbacks and resets, newest first."""
        return await guidelines.events(store_of(self.state.store).pool, database=database, only_global=only_global,
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
        state = self.state
        return await search_schema(state.schemas, state.settings.context, state.target(database),
                                   state.ruleset(database), query, limit=limit, role=principal.pg_role,
                                   claims=principal.claims)

    async def rules_summary(self, database: str, *, principal: Principal = ANONYMOUS) -> str:
        """The DBA's notes and instructions for ``database`` as the LLM reads them (hidden names redacted)."""
        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self.state
        return await rules_summary(state.schemas, state.settings.context, state.target(database),
                                   state.ruleset(database), role=principal.pg_role, claims=principal.claims)

    async def active_guideline(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The guideline questions on ``database`` use now: ``{"database", "version", "text"}``."""
        self.check_scope(principal, Operation.SCHEMA)
        principal.check_database(database)
        state = self.state
        return await active_guideline(state.schemas, state.settings.context, state.target(database),
                                      state.ruleset(database), state.guidelines, role=principal.pg_role,
                                      claims=principal.claims)

    def answers_questions(self) -> bool:
        """Whether questions can be answered at all: an LLM endpoint and a model (``llm.model``, or a
        database's ``ask.model``). MCP lists ``ask`` only then."""
        state = self.state
        return state.llm is not None and (state.settings.llm.model is not None or any(
            target.settings.ask.model for target in state.targets.by_name.values()))

    def serves_metrics(self) -> bool:
        """Whether a semantic layer is configured (``semantic_dir``): MCP lists ``list_metrics`` and
        ``query_metrics`` only then (a tool that can only fail is noise in the client's model's context)."""
        return self.state.semantic is not None

    async def answer(self, q: Question, on_attempt: OnAttempt | None = None, thread: Thread | None = None) -> Answer:
        """:meth:`ask`, plus what ``POST /v1/ask`` does around it: the answer is audited in the store before
        it is returned (so feedback can name its request id) and its corrections are handed to the sink.

        ``on_attempt`` sees each attempt as soon as it is validated (progress for MCP clients); ``thread``: the
        conversation, when the caller holds it (a reply to a clarification without a store, see
        :func:`gateway.pipeline.conversation.replying`).
        """
        state = self.state
        answer = await ask(state, q, on_attempt, thread)
        await audit_answer(state.store, answer, q)
        await hand_over(state.corrections, corrections_of(answer, q))
        return answer


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


def _changed(state: GatewayState, kind: str, detail: str) -> None:
    """Drop what this replica cached of a change another replica (or the CLI) made in the store."""
    if kind == "keys" and state.auth is not None:
        state.auth.forget(detail or None)
    elif kind == "guidelines":
        invalidate = getattr(state.guidelines, "invalidate", None)
        if invalidate is not None:
            invalidate()
    log.info("store_change_applied", kind=kind, detail=detail or "all")
