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
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
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
from gateway.feedback import FeedbackIn, StoredFeedback, audit_answer, store_of, submit
from gateway.llm import open_llm
from gateway.magic import lifecycle
from gateway.magic.wiring import open_feedback_store
from gateway.observability.logging import get_logger
from gateway.pipeline import Answer, Question, ask, ask_events, corrections_of, llm_for
from gateway.pipeline.verified import OnAttempt
from gateway.rules import RulesRegistry, visible_schema
from gateway.rules.grants import PrivilegeReport, report_privileges
from gateway.settings import Settings
from gateway.state import GatewayState
from gateway.store import guidelines
from gateway.store.guidelines import GuidelineVersion

__all__ = ["Gateway"]

log = get_logger(__name__)

# A statement every parser path sees, checked once at start-up so the first client does not pay for warm-up.
_WARM_UP_SQL = "WITH w AS (SELECT 1 AS x) SELECT count(*) FROM w JOIN w v ON v.x = w.x"


class Gateway:
    """Pools, store, LLM client, rules, caches and the regeneration scheduler, with the operations on them.

    Use it as an async context manager; the resources open on entry and close on exit, in reverse order.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._state: GatewayState | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> Gateway:
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
        masking.install(state)  # database errors lose hidden names where they become gateway errors
        state.auth = Authenticator(settings.auth, lambda: state.store)  # API keys, looked up in the store
        state.rate_limits = RateLimits(settings.backpressure)  # per key (or address), in memory per replica
        # None when no endpoint is configured: asking then answers llm_not_configured
        state.llm = await stack.enter_async_context(open_llm(settings.llm))
        await stack.enter_async_context(open_feedback_store(state))  # store.dsn: feedback, guidelines, MAGIC
        await report_privileges(state)  # a role that can read hidden columns or write: log, metric, readiness
        self._state = state
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
        """The target databases this principal may use: name, description and limits."""
        return [
            {"name": t.name, "description": t.settings.description, "max_rows": t.settings.limits.max_rows,
             "statement_timeout_ms": t.settings.limits.statement_timeout_ms}
            for t in self.state.targets.by_name.values() if principal.may_use(t.name)
        ]

    async def schema(self, database: str, *, tables: Sequence[str] | None = None,
                     principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Tables, columns, types, keys and comments; what the rules hide is left out.

        ``tables``: only these (by name, or ``schema.name``); unknown names are simply absent.
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
        """The safety verdict for ``sql`` under ``database``'s policy (hidden names masked), without running it."""
        if database is not None:
            principal.check_database(database)
        return verdict_view(self.state, check_sql(self.state, sql, database), database)

    async def sql(self, database: str, sql: str, *, max_rows: int | None = None,
                  principal: Principal = ANONYMOUS) -> SqlOutcome:
        """Check ``sql`` and run exactly that text read-only, as the principal's Postgres role.

        Raises a :class:`~gateway.errors.GatewayError` (``sql_blocked``, ``query_error`` ...) otherwise.
        """
        principal.check_database(database)
        return await run_client_sql(self.state, database, sql, max_rows, role=principal.pg_role)

    # --- questions ------------------------------------------------------------------------------------

    def question(self, database: str, question: str, *, evidence: str | None = None, max_rows: int | None = None,
                 request_id: str | None = None, principal: Principal = ANONYMOUS) -> Question:
        """A question as the pipeline takes it, after the principal's access is checked.

        Fails with ``llm_not_configured`` up front when no LLM can answer (unless verified examples may).
        """
        principal.check_database(database)
        state = self.state
        if not state.settings.store.exact_match_answers:
            llm_for(state, state.target(database))
        return Question(database, question, evidence, max_rows, request_id, role=principal.pg_role)

    async def ask(self, q: Question) -> Answer:
        """Answer a question: generate, check, execute, validate and reflect (see :mod:`gateway.pipeline`)."""
        return await ask(self.state, q)

    def ask_events(self, q: Question, answers: list[Answer]) -> AsyncIterator[tuple[str, Any]]:
        """``("attempt", ...)`` per validated attempt, then ``("answer", ...)``; the answer is appended to
        ``answers``. Closing the iterator cancels the question."""
        return ask_events(self.state, q, answers)

    # --- feedback and guidelines ----------------------------------------------------------------------

    async def feedback(self, item: FeedbackIn) -> tuple[StoredFeedback, bool]:
        """Store a verdict (and corrected SQL) on an answer; ``True`` when it was new. Committed first."""
        return await submit(self.state, item)

    async def guidelines(self) -> list[GuidelineVersion]:
        return await guidelines.list_all(store_of(self.state).pool)

    async def guideline(self, version: int) -> GuidelineVersion:
        return await lifecycle.get(store_of(self.state), version)

    async def regenerate(self, *, activate: bool | None = None) -> Any:
        """Run MAGIC over the corrections not yet used; returns the run's report."""
        return await lifecycle.run_regeneration(self.state, store_of(self.state), activate=activate)

    async def activate(self, version: int, *, force: bool = False) -> GuidelineVersion:
        return await lifecycle.activate(self.state, store_of(self.state), version, force=force)

    async def rollback(self, version: int | None = None) -> GuidelineVersion:
        return await lifecycle.rollback(self.state, store_of(self.state), version)

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


    # --- MCP: schema search and recorded answers (gateway.mcp) ------------------------------------------

    async def search_schema(self, database: str, query: str, *, limit: int = 20,
                            principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """Tables, columns and stored values of ``database`` that match the words of ``query``.

        Only what the rules leave visible is searched (see :mod:`gateway.context.search`): a hidden table,
        column or value is never matched nor returned.
        """
        principal.check_database(database)
        return await search_schema(self.state, database, query, limit=limit)

    async def rules_summary(self, database: str, *, principal: Principal = ANONYMOUS) -> str:
        """The DBA's notes and instructions for ``database`` as the LLM reads them (hidden names redacted)."""
        principal.check_database(database)
        return await rules_summary(self.state, database)

    async def active_guideline(self, database: str, *, principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """The guideline questions on ``database`` use now: ``{"database", "version", "text"}``."""
        principal.check_database(database)
        return await active_guideline(self.state, database)

    async def answer(self, q: Question, on_attempt: OnAttempt | None = None) -> Answer:
        """:meth:`ask`, plus what ``POST /v1/ask`` does around it: the answer is audited in the store before
        it is returned (so feedback can name its request id) and its corrections are handed to the sink.

        ``on_attempt`` sees each attempt as soon as it is validated (progress for MCP clients).
        """
        state = self.state
        answer = await ask(state, q, on_attempt)
        await audit_answer(state, answer, q.evidence)
        await hand_over(state.corrections, corrections_of(answer, q))
        return answer
