"""Introspected schema plus sample values per database, cached and refreshed after a TTL.

One refresh at a time per database (concurrent questions wait for it instead of each introspecting); when a
refresh fails and an older snapshot exists, the older one keeps serving and the failure is logged.

Every wait is bounded, so that a database that stops answering (a network cut, a frozen host, where no
``statement_timeout`` can fire) cannot hold questions: the refresh runs in a task of its own, outside any
request's deadline and cancellation, within ``context.refresh_timeout_s``; a question waits for it at most
``context.stale_wait_s`` when a stale snapshot exists (then answers from that one: ``schema_stale`` in the
log, ``nl2sql_schema_stale_total``), and without any snapshot at most until its own deadline (then 503
``database_unavailable``).

Schema changes need no restart and no TTL: at most every ``context.schema_check_s`` a question's lookup starts
(never waits for) a cheap catalog version check (gateway.execute.samples.catalog_version); when the version
moved, a refresh starts in the background and the current snapshot keeps serving until the new one is in.
With ``context.warm_start`` the gateway starts reading every schema as it starts (:meth:`SchemaCache.warm`);
:meth:`SchemaCache.progress` tells ``/readyz`` how far it got. Sample values come from the planner's
statistics where they list every value of a column (one query for all columns), else one GROUP BY each.

Callers with a Postgres role or row-policy values (claims) get a view of the snapshot cut to what they may
read (gateway.context.scope), cached per (database, role, claims) in a least-recently-used map of at most
``context.scoped_views_max`` entries. A view lives as long as the snapshot it was cut from: a refresh (every
``schema_ttl_s``) builds new views on their next use, so a GRANT or REVOKE reaches prompts within that time.
Callers with neither share the snapshot itself, as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import ctypes.util
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from gateway import errors
from gateway.context.scope import scoped_snapshot
from gateway.context.snapshot import SchemaSnapshot
from gateway.execute import Target
from gateway.execute import samples as sample_queries
from gateway.execute.introspect import Schema, TableInfo, introspect
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.rules.model import RuleSet
from gateway.serving import deadline as request_deadline
from gateway.settings import ContextSettings

log = get_logger(__name__)

TEXT_TYPES = ("text", "character varying", "character", "citext", "name", "varchar", "char")
# Without planner statistics, only tables this small are sampled (one GROUP BY per text column).
UNANALYZED_SAMPLE_MAX_ROWS = 200_000
SAMPLE_CONCURRENCY = 4
# A first read of a schema this large is published before its sample values (see _publish_partial); a
# smaller one is read whole in well under a second, and its first question gets the values too.
PARTIAL_MIN_TABLES = 500
# A question asked before a large database's first snapshot is published reads this many best-matching
# tables (plus as many foreign-key neighbours) from the catalogs (see SchemaCache.view).
PROBE_TABLES = 50
# Catalog probes in flight per database: each reads the catalogs on a pooled connection, so a flood of questions
# before the first read is published does not hold the pool; the rest wait for the first read instead.
PROBE_CONCURRENCY = 2


def is_text_type(type_name: str) -> bool:
    base = type_name.split("(", 1)[0].strip().lower()
    return base in TEXT_TYPES


ViewKey = tuple[str, str | None, tuple[tuple[str, str], ...]]


# Builds what every question of a snapshot shares (visible schema, indexes) and keeps it on the snapshot.
Prepare = Callable[[SchemaSnapshot, RuleSet, int], object]


class SchemaCache:
    def __init__(self, settings: ContextSettings, prepare: Prepare) -> None:
        self.settings = settings
        # The question-independent work of build_context (gateway.context.build.prepare), passed in so that
        # the cache does not import the stage that reads it.
        self._prepare = prepare
        self._snapshots: dict[str, SchemaSnapshot] = {}
        self._refreshes: dict[str, asyncio.Task[SchemaSnapshot]] = {}  # one refresh in flight per database
        # (database, role, claims) -> the caller's view, least recently used first
        self._views: OrderedDict[ViewKey, SchemaSnapshot] = OrderedDict()
        self._probes: dict[str, asyncio.Semaphore] = {}  # database -> the catalog probes it allows at once
        self._building: dict[ViewKey, asyncio.Future[SchemaSnapshot]] = {}
        self._checks: dict[str, asyncio.Task[None]] = {}  # one catalog version check in flight per database
        self._progress: dict[str, dict[str, Any]] = {}  # database -> what its refresh in flight has done
        # database -> resolved with the partial snapshot of its first read (see _publish_partial), so that a
        # question waiting for that read stops waiting as soon as the schema is introspected
        self._first: dict[str, asyncio.Future[SchemaSnapshot]] = {}
        # Databases the warm start counted at or above ``warm_start_tables``: until their first snapshot is
        # published, a question reads only the tables its words match (:meth:`_probe`).
        self._large: set[str] = set()
        # Awaited (with the database's name) before a first read introspects: tests hold the read there.
        self.before_first_read: Callable[[str], Awaitable[None]] | None = None

    async def warm(self, targets: Any, rules_of: Any) -> list[str]:
        """Start reading the schema of every target of at least ``warm_start_tables`` relations in the
        background (``rules_of(name)``: its rules); the names of those started. Awaited as the gateway
        starts: one count per database, bounded by its client timeout. A database that cannot be counted
        or whose rules are not served (broken at the first start: ``rules_unavailable``) is not warmed;
        its first question reads the schema, or is refused, as without a warm start."""
        started: list[str] = []
        for target in targets:
            if target.name in self._snapshots or target.name in self._refreshes:
                continue
            try:
                rules = rules_of(target.name)
                if self.settings.warm_start_tables:
                    count = await sample_queries.relation_count(target)
                    if count < self.settings.warm_start_tables:
                        continue
                    self._large.add(target.name)
            except Exception as exc:  # noqa: BLE001 - the warm start is an optimisation, never a start failure
                log.info("schema_warm_skipped", database=target.name, error=f"{type(exc).__name__}: {exc}")
                continue
            self._start(target, rules)
            started.append(target.name)
        if started:
            log.info("schema_warm_started", databases=started)
        return started

    def progress(self, database: str) -> dict[str, Any]:
        """How far the schema of ``database`` is read: ``{"state": "ready" | "loading" | "not_loaded", ...}``
        with the tables known, the columns sampled so far and the snapshot's age; for ``/readyz``."""
        current = self._snapshots.get(database)
        loading = self._progress.get(database) if database in self._refreshes else None
        out: dict[str, Any] = {"state": "ready" if current is not None else "loading" if loading else "not_loaded"}
        if current is not None:
            out["tables"] = len(current.schema.tables)
            out["age_s"] = round(time.monotonic() - current.loaded_at, 1)
            if current.partial:  # questions are answered, without sample values yet
                out["values"] = "loading"
        if loading:
            out["refresh"] = dict(loading)
        return out

    def _check(self, target: Target, rules: RuleSet, current: SchemaSnapshot) -> None:
        """Compare the catalog version in the background, at most every ``schema_check_s``; a change starts
        a refresh (the current snapshot serves until it is done)."""
        every = self.settings.schema_check_s
        now = time.monotonic()
        if not every or now - current.checked_at < every or target.name in self._checks \
                or target.name in self._refreshes:
            return
        current.checked_at = now

        async def check() -> None:
            try:
                async with asyncio.timeout(self.settings.refresh_timeout_s):
                    version = await sample_queries.catalog_version(target)
            except Exception as exc:  # a failed check changes nothing: the TTL still applies
                log.info("schema_check_failed", database=target.name, error=f"{type(exc).__name__}: {exc}")
                return
            if version != current.version and self._snapshots.get(target.name) is current \
                    and target.name not in self._refreshes:
                log.info("schema_changed", database=target.name)
                self._start(target, rules)

        context = contextvars.copy_context()
        context.run(request_deadline.start_at, None)
        task = asyncio.create_task(check(), name=f"schema-check-{target.name}", context=context)
        self._checks[target.name] = task
        task.add_done_callback(lambda done: self._checks.pop(target.name, None))

    def invalidate(self, database: str | None = None) -> None:
        if database is None:
            self._snapshots.clear()
            self._views.clear()
        else:
            self._snapshots.pop(database, None)
            for key in [k for k in self._views if k[0] == database]:
                del self._views[key]

    def scoped_views(self) -> int:
        """How many callers' views are cached (at most ``context.scoped_views_max``)."""
        return len(self._views)

    async def view(self, target: Target, rules: RuleSet, role: str | None = None,
                   claims: tuple[tuple[str, str], ...] = (), question: str | None = None) -> SchemaSnapshot:
        """The snapshot as a caller acting as ``role`` with row-policy ``claims`` may read it; without either,
        the shared snapshot itself. ``unknown_pg_role`` when the role does not exist.

        ``question``: the text being answered. On a large database (counted by the warm start) whose first
        snapshot is not yet published, a caller without a role or claims then gets a snapshot built for this
        question alone from the tables its words match (:meth:`_probe`), instead of waiting for the whole
        first read. A caller with either waits as before: its view redacts every name it may not read,
        which needs the whole schema."""
        if question is not None and role is None and not claims and target.name in self._large \
                and target.name not in self._snapshots:
            probes = self._probes.setdefault(target.name, asyncio.Semaphore(PROBE_CONCURRENCY))
            if not probes.locked():
                async with probes:
                    return await self._probe(target, rules, question)
        base = await self.get(target, rules)
        if role is None and not claims:
            return base
        key: ViewKey = (target.name, role, tuple(claims))
        found = self._views.get(key)
        if found is not None and found.base is base:
            self._views.move_to_end(key)
            return found
        pending = self._building.get(key)
        if pending is None:
            # One build per key at a time: concurrent questions of the same caller wait for it.
            pending = asyncio.ensure_future(self._build_view(key, target, rules, base))
            self._building[key] = pending
            pending.add_done_callback(lambda done: self._built(key, done))
        return await asyncio.shield(pending)

    def _built(self, key: ViewKey, done: asyncio.Future[SchemaSnapshot]) -> None:
        if self._building.get(key) is done:
            del self._building[key]
        if not done.cancelled():
            done.exception()  # retrieved: a failure reaches every waiter, never the loop's "never retrieved" log

    async def _build_view(self, key: ViewKey, target: Target, rules: RuleSet, base: SchemaSnapshot) -> SchemaSnapshot:
        started = time.perf_counter()
        try:
            view = await scoped_snapshot(target, rules, base, key[1], key[2], self.settings.low_cardinality_max)
        except errors.UnknownPgRole:
            log.warning("unknown_pg_role", database=target.name, role=key[1])
            raise
        self._views[key] = view
        self._views.move_to_end(key)
        while len(self._views) > self.settings.scoped_views_max:
            self._views.popitem(last=False)
        log.info("scoped_view_built", database=target.name, role=key[1], claims=len(key[2]),
                 tables=len(view.schema.tables), sampled_columns=len(view.values),
                 seconds=round(time.perf_counter() - started, 3))
        return view

    async def _probe(self, target: Target, rules: RuleSet, question: str) -> SchemaSnapshot:
        """A snapshot of the tables ``question``'s words match and their foreign-key neighbours, read from the
        catalogs now (gateway.execute.candidates), without sample values; the first read keeps running (it is
        started if it is not) and replaces this path once published."""
        from gateway.context.words import identifiers, terms
        from gateway.execute.candidates import candidate_schema

        if target.name not in self._refreshes:
            self._start(target, rules)
        started = time.perf_counter()
        schema = await candidate_schema(target, terms(question) | identifiers(question),
                                        hidden_tables=rules.hidden_tables, hidden_columns=rules.hidden_columns,
                                        limit=PROBE_TABLES)
        log.info("schema_probe", database=target.name, tables=len(schema.tables),
                 seconds=round(time.perf_counter() - started, 3))
        now = time.monotonic()
        return SchemaSnapshot(schema, {}, None, now, checked_at=now, partial=True, probe=True)

    def _replace(self, database: str, snapshot: SchemaSnapshot) -> None:
        """Publish ``snapshot``; the one it replaces lets go of its indexes and of the callers' views cut
        from it at once (a partial first snapshot's index of 10,000 tables is not kept beside the complete
        one's until the views age out of the LRU map)."""
        old = self._snapshots.get(database)
        self._snapshots[database] = snapshot
        if old is not None and old is not snapshot:
            old.prepared = None
            for key in [k for k, v in self._views.items() if k[0] == database and v.base is old]:
                del self._views[key]
            if old.partial:
                # Both indexes were alive while the complete one was built: hand the freed heap back to the
                # system now (glibc keeps it otherwise), in a thread, as it walks the whole heap.
                asyncio.get_running_loop().run_in_executor(None, _trim_heap)

    async def close(self) -> None:
        """Cancel the refreshes still running (the gateway is closing; their pools go next)."""
        tasks: list[asyncio.Task[Any]] = [*self._refreshes.values(), *self._checks.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def age_out(self, database: str) -> None:
        """Make ``database``'s snapshot stale (still served while a refresh cannot finish), as a TTL would."""
        snapshot = self._snapshots.get(database)
        if snapshot is not None:
            snapshot.loaded_at = time.monotonic() - self.settings.schema_ttl_s

    async def get(self, target: Target, rules: RuleSet) -> SchemaSnapshot:
        """A snapshot no older than ``schema_ttl_s``; the stale one when a refresh fails or cannot finish
        within ``stale_wait_s``; ``database_unavailable`` when there is none and none could be read in time."""
        current = self._snapshots.get(target.name)
        if current is not None and not self._stale(current):
            self._check(target, rules, current)
            return current
        refresh = self._refreshes.get(target.name)
        if refresh is None:
            refresh = self._start(target, rules)
        wait = request_deadline.remaining()
        if current is not None:
            wait = self.settings.stale_wait_s if wait is None else min(wait, self.settings.stale_wait_s)
        try:
            # shield: a question that stops waiting (its deadline, its client gone) leaves the refresh running
            # for the next question; the refresh has its own bound.
            async with asyncio.timeout(None if wait is None else max(wait, 0.0)):
                first = self._first.get(target.name) if current is None else None
                if first is not None and not first.done():
                    await asyncio.wait({refresh, first}, return_when=asyncio.FIRST_COMPLETED)  # cancels neither
                if first is not None and first.done() and not first.cancelled():
                    return first.result()
                return await asyncio.shield(refresh)
        except TimeoutError:
            if current is not None:
                return self._stale_served(target.name, current, "refresh_slow")
            raise errors.DatabaseUnavailable(
                f"the schema of {target.name!r} could not be read in time (the database does not answer); "
                "retry shortly", database=target.name) from None
        except Exception as exc:
            if current is None:
                raise
            return self._stale_served(target.name, current, "refresh_failed", exc)

    def _start(self, target: Target, rules: RuleSet) -> asyncio.Task[SchemaSnapshot]:
        # A context of its own without the request's deadline: the refresh serves every later question too.
        context = contextvars.copy_context()
        context.run(request_deadline.start_at, None)
        self._progress[target.name] = {"phase": "starting"}
        if target.name not in self._snapshots and target.name not in self._first:
            self._first[target.name] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._refresh(target, rules), name=f"schema-refresh-{target.name}",
                                   context=context)
        self._refreshes[target.name] = task
        task.add_done_callback(lambda done: self._finished(target.name, done))
        return task

    async def _refresh(self, target: Target, rules: RuleSet) -> SchemaSnapshot:
        try:
            async with asyncio.timeout(self.settings.refresh_timeout_s):
                fresh = await self._load(target, rules)
                # The question-independent work of build_context (visible schema, indexes) is done here, in
                # a thread, before the snapshot is published: no question pays for it, and the event loop
                # keeps serving meanwhile.
                self._progress.setdefault(target.name, {})["phase"] = "indexing"
                await asyncio.to_thread(self._prepare, fresh, rules, self.settings.sample_values)
        except TimeoutError:
            raise errors.DatabaseUnavailable(
                f"reading the schema of {target.name!r} took longer than {self.settings.refresh_timeout_s:g} s "
                "(context.refresh_timeout_s)", database=target.name) from None
        self._replace(target.name, fresh)
        return fresh

    def _finished(self, database: str, task: asyncio.Task[SchemaSnapshot]) -> None:
        if self._refreshes.get(database) is task:
            del self._refreshes[database]
        first = self._first.pop(database, None)
        if first is not None and not first.done():
            first.cancel()  # the read ended without a partial snapshot: its waiters have the task's outcome
        if task.cancelled():
            return
        exc = task.exception()  # retrieved here, so a failure nobody waited for is not reported as lost
        if exc is not None:
            log.warning("schema_refresh_failed", database=database, error=f"{type(exc).__name__}: {exc}")
            current = self._snapshots.get(database)
            if current is not None and current.partial:  # no values yet: the next question tries again
                self.age_out(database)
            elif current is not None:
                current.loaded_at = time.monotonic()  # retry after another TTL, not on every question

    def _stale_served(self, database: str, snapshot: SchemaSnapshot, reason: str,
                      exc: BaseException | None = None) -> SchemaSnapshot:
        metrics.SCHEMA_STALE.labels(database, reason).inc()
        log.warning("schema_stale", database=database, reason=reason,
                    age_s=round(time.monotonic() - snapshot.loaded_at, 1),
                    **({"error": f"{type(exc).__name__}: {exc}"} if exc is not None else {}))
        return snapshot

    def _stale(self, snapshot: SchemaSnapshot) -> bool:
        return time.monotonic() - snapshot.loaded_at >= self.settings.schema_ttl_s

    async def _publish_partial(self, target: Target, rules: RuleSet, schema: Schema, version: str | None) -> None:
        """A first read of a large schema: publish it without sample values (indexed in a thread), so that
        questions need not wait for the statistics and samples, which take most of a first read (17 of 23 s
        at 10,000 tables); the complete snapshot replaces it when the refresh ends."""
        now = time.monotonic()
        partial = SchemaSnapshot(schema, {}, None, now, version=version, checked_at=now, partial=True)
        await asyncio.to_thread(self._prepare, partial, rules, self.settings.sample_values)
        if target.name not in self._snapshots:
            self._snapshots[target.name] = partial
            log.info("schema_partial_published", database=target.name, tables=len(schema.tables))
            first = self._first.get(target.name)
            if first is not None and not first.done():
                first.set_result(partial)

    async def _load(self, target: Target, rules: RuleSet) -> SchemaSnapshot:
        started = time.perf_counter()
        progress = self._progress.setdefault(target.name, {})
        if self.before_first_read is not None and target.name not in self._snapshots:
            await self.before_first_read(target.name)
        progress["phase"] = "introspecting"
        # Read before introspection: a change made while introspecting shows as a newer version next check.
        version = await sample_queries.catalog_version(target) if self.settings.schema_check_s else None
        schema = await introspect(target)
        introspected = time.perf_counter()
        progress.update(phase="sampling", tables=len(schema.tables))
        if target.name not in self._snapshots and len(schema.tables) >= PARTIAL_MIN_TABLES:
            await self._publish_partial(target, rules, schema, version)
        column_stats = await sample_queries.column_stats(target)
        stats = column_stats.n_distinct
        trgm = await sample_queries.trigram_schema(target)
        limit = self.settings.low_cardinality_max
        wanted = [(t, c.name) for t in schema.tables for c in t.columns
                  if is_text_type(c.type) and not rules.is_hidden_column(t.qualified_name, c.name)
                  and _maybe_low_cardinality(t, c.name, stats, limit)]
        listed = await sample_queries.complete_value_lists(target, column_stats,
                                                           [(t.schema, t.name, c) for t, c in wanted], limit)
        values = {(t.qualified_name, c): listed[(t.schema, t.name, c)] for t, c in wanted
                  if (t.schema, t.name, c) in listed}
        rest = [(t, c) for t, c in wanted if (t.schema, t.name, c) not in listed]
        from_stats = time.perf_counter()
        progress.update(columns=len(wanted), sampled=len(values))
        gate = asyncio.Semaphore(SAMPLE_CONCURRENCY)

        async def fetch(table: TableInfo, column: str) -> tuple[tuple[str, str], list[str] | None]:
            async with gate:
                found = await sample_queries.distinct_values(target, table.schema, table.name, column, limit)
            progress["sampled"] += 1
            return (table.qualified_name, column), found

        results = await asyncio.gather(*(fetch(t, c) for t, c in rest))
        values.update((key, found) for key, found in results if found)
        log.info("schema_loaded", database=target.name, tables=len(schema.tables), sampled_columns=len(values),
                 from_statistics=len(listed), pg_trgm=trgm is not None,
                 introspect_s=round(introspected - started, 3), statistics_s=round(from_stats - introspected, 3),
                 seconds=round(time.perf_counter() - started, 3))
        candidates = tuple((t.schema, t.name, t.qualified_name, c) for t, c in wanted)
        now = time.monotonic()
        return SchemaSnapshot(schema, values, trgm, now, candidates=candidates, version=version, checked_at=now)


def _trim_heap() -> None:
    """Return free heap memory to the system (glibc's ``malloc_trim``); nothing elsewhere."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass


def _maybe_low_cardinality(table: TableInfo, column: str, stats: dict[tuple[str, str, str], float],
                           limit: int) -> bool:
    n_distinct = stats.get((table.schema, table.name, column))
    if n_distinct is None:
        return table.estimated_rows <= UNANALYZED_SAMPLE_MAX_ROWS
    distinct = n_distinct if n_distinct > 0 else -n_distinct * max(table.estimated_rows, 1)
    return distinct <= limit
