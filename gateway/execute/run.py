"""Run one checked statement, guarded: read-only transaction, local timeouts, capped fetch from a cursor.

The text that runs is exactly the text the safety check saw; the row cap is applied by fetching at most
``max_rows + 1`` rows from a portal, so the query's meaning never changes and ``truncated`` is exact.

A repeated query takes three round trips: BEGIN READ ONLY with the SET LOCALs and the cost gate's savepoint
(behind a DEALLOCATE ALL when the connection last served another principal); Bind and Execute of the
statement kept for this principal (gateway.execute.statements), which bring the first batch of rows; and
ROLLBACK with the session reset. A new text adds its Parse, a cost estimate older than a minute its EXPLAIN.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from gateway import errors
from gateway.execute import claims as row_claims
from gateway.execute import cost, faults, statements, values, wire
from gateway.execute.budget import FIRST_BATCH, Lease, fetch_rows
from gateway.execute.pool import RESET_SQL, SESSION_RESET_SQL, Target
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.serving import deadline as request_deadline
from gateway.serving import timeouts

log = get_logger(__name__)

# Kept for the other execute modules' ``except`` clauses; gateway.execute.faults decides what each one is.
UNAVAILABLE = faults.FAULTS


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str


@dataclass(slots=True, weakref_slot=True)
class QueryResult:
    columns: list[Column]
    rows: list[list[Any]]
    truncated: bool
    timings: dict[str, float] = field(default_factory=dict)
    size_bytes: int = 0  # what the rows hold, as counted against the result budget
    # The result budget's share for these rows; the response charges its body to it while writing it.
    lease: Lease | None = field(default=None, repr=False, compare=False)
    source: str = "primary"  # where it ran: primary, or the read replica's name (replica1, ...)

    @property
    def row_count(self) -> int:
        return len(self.rows)


# How long past the deadline the client waits for a server that stopped answering (a network cut, a frozen
# server), on top of the statement_timeout that ends a slow query on the server at the deadline.
NET_GRACE_S = request_deadline.NET_GRACE_S
# How long returning a connection may take (waiting for a cancelled query's cancel, then the reset) before
# the pool closes it instead.
RELEASE_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class _Budget:
    """What one attempt may spend: the database's limits, capped by the request's deadline."""

    acquire_s: float
    statement_ms: int
    by_deadline: bool  # the deadline, not the limit, set statement_ms: a timeout then means deadline_exceeded
    client_s: float | None  # the client-side guard against a server that stopped answering (network cut)

    @classmethod
    def of(cls, target: Target) -> _Budget:
        limits = target.settings.limits
        acquire_s = request_deadline.cap(limits.acquire_timeout_s, "a database connection")
        left = request_deadline.remaining()
        statement_ms = limits.statement_timeout_ms
        by_deadline = left is not None and left * 1000 < statement_ms
        if by_deadline:
            statement_ms = max(1, int(left * 1000))  # type: ignore[operator]
        client_s = None if left is None else left + NET_GRACE_S
        return cls(acquire_s, statement_ms, by_deadline, client_s)


Claims = Sequence[tuple[str, str]]


def _begin_sql(target: Target, role: str | None, statement_timeout_ms: int | None = None,
               claims: Claims = ()) -> str:
    limits = target.settings.limits
    parts = [
        "BEGIN TRANSACTION READ ONLY",
        f"SET LOCAL statement_timeout = {int(statement_timeout_ms or limits.statement_timeout_ms)}",
        f"SET LOCAL lock_timeout = {int(limits.lock_timeout_ms)}",
        f"SET LOCAL idle_in_transaction_session_timeout = {int(limits.idle_in_transaction_timeout_ms)}",
        # The safety check reads string literals as Postgres does with this on (the default); pin it so a
        # server configured otherwise cannot read the same text differently from the checker.
        "SET LOCAL standard_conforming_strings = on",
    ]
    if limits.work_mem:
        parts.append(f"SET LOCAL work_mem = '{limits.work_mem}'")  # validated by the setting's pattern
    if claims:
        # The caller's row-policy values as nl2sql.<name>, for this transaction only: the database's RLS
        # policies read them (gateway.execute.claims); ROLLBACK takes them away with everything else.
        parts.append(row_claims.settings_sql(claims))
    if role:
        # Role names come from the gateway's own key store, never from a request; quote them anyway.
        parts.append(f'SET LOCAL ROLE "{role.replace(chr(34), chr(34) * 2)}"')
    parts.append(cost.SAVEPOINT)  # last: the cost gate returns here when EXPLAIN cannot take the statement
    return ";\n".join(parts)


async def run_query(target: Target, sql: str, *, max_rows: int | None = None, role: str | None = None,
                    principal: str | None = None, claims: Claims = (), args: Sequence[str] = ()) -> QueryResult:
    """Execute ``sql`` on ``target`` and return at most ``max_rows`` rows.

    Raises :class:`errors.QueryError` (with ``sqlstate``, ``message``, ``position``),
    :class:`errors.StatementTimeout`, :class:`errors.DatabaseUnavailable` (every driver and socket fault,
    sorted by :mod:`gateway.execute.faults`), :class:`errors.PoolExhausted` (no connection became free within
    ``acquire_timeout_s``; never retried) or :class:`errors.DeadlineExceeded` (the request's deadline,
    :mod:`gateway.serving.deadline`, caps the connection wait and the statement_timeout). A lost connection is
    retried once on a fresh one: the statement is read-only, so running it again is harmless.

    ``principal``: whose request this is (:attr:`gateway.auth.keys.Principal.partition`, which includes
    ``role``). With one, the statement is kept prepared on the connection for that principal only
    (gateway.execute.statements); without one (internal callers) nothing is kept.

    ``claims``: the caller's row-policy values, set as ``nl2sql.<name>`` for the transaction (RLS reads them).
    ``args``: text values for the statement's ``$1 ...`` (a rules row filter's claims), converted to the
    types Postgres infers for them (``row_policy_claim_invalid`` when one does not fit).
    """
    cap = min(max_rows or target.settings.limits.max_rows, target.settings.limits.max_rows)
    row_claims.check_claims(claims)
    run = _Run(sql, cap, role, tuple(claims), tuple(args))
    source, pool = target.routes()[0]
    try:
        return await _run_guarded(target, run, principal, source, pool)
    except faults.FAULTS as exc:
        if source == "primary":
            _raise_unless_retryable(target, exc)
        else:  # the replica is down or cut off: the primary answers, and the replica waits for its next check
            if faults.classify(exc) is None:
                raise  # not the database's nor the network's: a bug
            _raise_if_deadline_spent(target)
            target.replica_failed(source)
            _replica_retried(target, source, exc)
    except _RecoveryConflict as conflict:  # replaying WAL ended the query on the standby: once more elsewhere
        _raise_if_deadline_spent(target)
        _replica_retried(target, source, conflict.__cause__)
    try:
        return await _run_guarded(target, run, principal, "primary", target.pool)
    except faults.FAULTS as exc:
        _raise_unless_retryable(target, exc)
        raise _unavailable(target, exc, faults.Fault.UNAVAILABLE) from exc
    except _RecoveryConflict as conflict:  # the primary has no recovery: cannot happen; reported as it came
        raise conflict.error from conflict.__cause__


class _RecoveryConflict(Exception):
    """A standby cancelled the query to replay WAL (40001/57P04 "conflict with recovery"); ``error`` is what
    the client would be told."""

    def __init__(self, error: errors.GatewayError) -> None:
        super().__init__(str(error))
        self.error = error


def _recovery_conflict(exc: BaseException) -> bool:
    return (isinstance(exc, asyncpg.PostgresError) and exc.sqlstate in ("40001", "57P04")
            and "conflict with recovery" in str(getattr(exc, "message", "") or exc))


def _replica_retried(target: Target, source: str, exc: BaseException | None) -> None:
    log.info("replica_query_retried", database=target.name, replica=source, error=repr(exc))
    metrics.REPLICA_QUERIES.labels(target.name, source, "retried").inc()


def _raise_unless_retryable(target: Target, exc: BaseException) -> None:
    """Return when ``exc`` is an outage worth one more try; raise what the client is told otherwise."""
    _raise_if_deadline_spent(target)
    fault = faults.classify(exc)
    if fault is None:
        raise exc  # not the database's nor the network's: a bug, which the error handler logs as one
    if fault is not faults.Fault.UNAVAILABLE:  # a refused login or a missing database: retrying cannot help
        raise _unavailable(target, exc, fault) from exc


def _unavailable(target: Target, exc: BaseException, fault: faults.Fault) -> errors.DatabaseUnavailable:
    metrics.DB_ERRORS.labels(target.name, errors.DatabaseUnavailable.code).inc()
    return faults.database_error(target.name, exc, fault)


def _raise_if_deadline_spent(target: Target) -> None:
    left = request_deadline.remaining()
    if left is not None and left < request_deadline.MIN_LEFT_S:
        metrics.DB_ERRORS.labels(target.name, errors.DeadlineExceeded.code).inc()
        raise request_deadline.exceeded(f"the query on {target.name!r}")


@dataclass(frozen=True, slots=True)
class _Run:
    """What one query runs with: the text, its row cap, role, row-policy settings and parameters."""

    sql: str
    cap: int
    role: str | None
    claims: tuple[tuple[str, str], ...]
    args: tuple[str, ...]


async def _run_guarded(target: Target, run: _Run, principal: str | None, source: str,
                       pool: asyncpg.Pool) -> QueryResult:
    budget = _Budget.of(target)
    if budget.client_s is None:
        result = await _run_once(target, run, budget, principal, pool)
    else:
        # statement_timeout ends a slow query on the server; this ends the wait for a server that is gone.
        async with timeouts.timeout(budget.client_s):
            result = await _run_once(target, run, budget, principal, pool)
    result.source = source
    if target.replicas:
        metrics.REPLICA_QUERIES.labels(target.name, source, "ok").inc()
    return result


async def _run_once(target: Target, run: _Run, budget: _Budget, principal: str | None,
                    pool: asyncpg.Pool) -> QueryResult:
    started = time.perf_counter()
    lease = await target.results.admit()  # before a connection is taken: waiting must not hold one
    try:
        # The role and the row-policy values are part of the partition whatever the principal string says.
        partition = None if principal is None else f"{principal}|{run.role or ''}|{run.claims!r}"
        return await _run_leased(target, run, budget, lease, started, partition, pool)
    except BaseException:
        lease.release()
        raise


async def _run_leased(target: Target, run: _Run, budget: _Budget, lease: Lease, started: float,
                      partition: str | None, pool: asyncpg.Pool) -> QueryResult:
    sql, cap, role = run.sql, run.cap, run.role
    async with _acquire(target, budget.acquire_s, pool) as conn:
        acquired = time.perf_counter()
        session = statements.session_of(conn)
        session.reset_done = False
        if session.pooled:
            partition = None  # behind a transaction pooler nothing outlives the transaction: keep nothing
        # What the driver receives is charged as it arrives, before it is decoded (gateway.execute.wire).
        meter = wire.attach(conn, lease, target.settings.limits.max_result_bytes, lambda: _too_large(target))
        try:
            # One round trip: DEALLOCATE ALL when another principal's statements may be on the connection,
            # BEGIN READ ONLY, the SET LOCALs and the cost gate's savepoint.
            await conn.execute(statements.claim(session, partition)
                               + _begin_sql(target, role, budget.statement_ms, run.claims))
            statements.claimed(session, partition)
            state = await statements.prepare(conn, session, sql, partition)
            columns = [Column(a.name, a.type.name) for a in state._get_attributes()]
            wire.expect(meter, [c.type for c in columns])
            args = _args(state, run.args)
            await cost.gate(conn, target.name, target.settings.limits, sql, role, args, reveal=not run.claims)
            try:
                portal = await _Portal.open(conn, sql, state, min(FIRST_BATCH, cap + 1), args)
            except asyncpg.InvalidCachedStatementError:
                # The tables changed under a kept statement: back to the savepoint, prepare again, once.
                await conn.execute("ROLLBACK TO " + cost.SAVEPOINT)
                statements.drop(conn, session, sql)
                state = await statements.prepare(conn, session, sql, partition)
                columns = [Column(a.name, a.type.name) for a in state._get_attributes()]
                args = _args(state, run.args)
                portal = await _Portal.open(conn, sql, state, min(FIRST_BATCH, cap + 1), args)
            rows, truncated = await _fetch(target, portal, cap, columns, lease)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if meter is not None and meter.error is not None:
                raise meter.error from exc  # the meter ended the connection: the result did not fit
            if faults.classify(exc, connection_closed=conn.is_closed()) is not None:
                raise  # run_query reports the fault, with this exception chained
            if isinstance(exc, asyncpg.InterfaceError):
                # e.g. a statement that expects bind parameters: the client's SQL, not the database, is at fault
                raise errors.QueryError(str(exc), sqlstate=None, message=str(exc), position=None,
                                        database=target.name) from exc
            error = target.mask_error(_query_error(target.name, exc, by_deadline=budget.by_deadline))
            if _recovery_conflict(exc) and pool is not target.pool:
                raise _RecoveryConflict(error) from exc
            raise error from exc
        finally:
            wire.detach(meter, lease)
            if _abandoned(conn, target):
                pass  # closed: nothing to roll back
            elif _cancelling():  # the client left: asyncpg is sending the server a cancel; let it land first
                await _cancel_landed(conn)
            if not _closed(conn):
                await _end(conn, target, session, partition)
        executed = time.perf_counter()
    _db_seconds(target.name).observe(executed - acquired)
    result = QueryResult(
        columns=columns,
        rows=rows,
        truncated=truncated,
        timings={"acquire_ms": (acquired - started) * 1000, "db_ms": (executed - acquired) * 1000},
        size_bytes=lease.bytes,
        lease=lease,
    )
    # The rows stay charged to the process's result budget until nothing refers to them any more: after
    # the response has been written, not when the fetch ends.
    weakref.finalize(result, lease.release)
    return result


def _db_seconds(database: str) -> Any:
    """The database's query-time histogram; ``labels()`` validates and locks on every call, so each
    database's child is looked up once (the names come from the settings: a bounded set)."""
    child = _DB_SECONDS.get(database)
    if child is None:
        child = _DB_SECONDS[database] = metrics.DB_SECONDS.labels(database)
    return child


_DB_SECONDS: dict[str, Any] = {}


def _args(state: Any, values: tuple[str, ...]) -> tuple[Any, ...]:
    """The row filter's claim values, typed as Postgres inferred each parameter. A statement with
    parameters and no values is left to the driver, which refuses it (the client's SQL is at fault)."""
    if not values:
        return ()
    types = [t.name for t in state._get_parameters()]
    if len(types) != len(values):
        raise errors.RowPolicyClaimInvalid(f"the statement has {len(types)} parameter(s), the row filters "
                                           f"bind {len(values)}", parameters=len(types))
    return tuple(row_claims.bind(values, types))


class _Portal:
    """The statement's portal; its first batch comes in the round trip that binds it (Bind, Execute, Sync),
    where asyncpg's cursor binds in one round trip and fetches in another."""

    __slots__ = ("cursor", "first")

    def __init__(self, cursor: Any, first: list[asyncpg.Record]) -> None:
        self.cursor = cursor
        self.first: list[asyncpg.Record] | None = first

    @classmethod
    async def open(cls, conn: asyncpg.Connection, sql: str, state: Any, n: int, args: tuple[Any, ...] = ()) -> _Portal:
        connection = statements.raw(conn)
        cursor = asyncpg.cursor.Cursor(connection, sql, state, args, connection._protocol.get_record_class())
        first = await cursor._bind_exec(n, None)
        return cls(cursor, first)

    async def fetch(self, n: int) -> list[asyncpg.Record]:
        first, self.first = self.first, None
        if first is not None:
            return first  # fetch_rows asks for FIRST_BATCH (capped by the row cap) first, as opened
        return await self.cursor.fetch(n)  # type: ignore[no-any-return]


async def _end(conn: asyncpg.Connection, target: Target, session: statements.Session,
               partition: str | None) -> None:
    """ROLLBACK and the session reset in one round trip, so the pool's own reset can skip the connection.

    The principal's kept statements stay (gateway.execute.statements); without a principal the reset
    deallocates everything. On failure the connection is closed: the pool opens a fresh one."""
    keep = partition is not None and session.partition == partition and not session.unsure
    try:
        async with timeouts.timeout(RELEASE_TIMEOUT_S):  # a server that stops answering now cannot hold us
            await _end_session(conn, session, keep)
    except Exception as exc:  # noqa: BLE001 - the pool discards a closed connection
        log.info("rollback_failed", database=target.name, error=repr(exc))
        conn.terminate()


async def _end_session(conn: asyncpg.Connection, session: statements.Session, keep: bool) -> None:
    if keep:
        await conn.execute("ROLLBACK;\n" + SESSION_RESET_SQL)
    else:
        session.forget()
        session.unsure = True
        await conn.execute("ROLLBACK;\n" + RESET_SQL)
        statements.cleared(session)
    session.reset_done = True


class _acquire:  # noqa: N801 - used as ``async with _acquire(...) as conn``, like the function it was
    """A connection of ``pool`` (the target's own by default) within ``timeout``; a wait that ends on a busy
    pool is ``pool_exhausted``. A class rather than an ``asynccontextmanager``, whose generator costs a
    microsecond more on every query."""

    __slots__ = ("conn", "pool", "target", "timeout")

    def __init__(self, target: Target, timeout: float, pool: asyncpg.Pool | None = None) -> None:
        self.target, self.timeout = target, timeout
        self.pool = target.pool if pool is None else pool
        self.conn: Any = None

    async def __aenter__(self) -> asyncpg.Connection:
        target, pool, timeout = self.target, self.pool, self.timeout
        try:
            # A timeout around the wait, not acquire(timeout=): asyncpg's wait_for runs it in a task of its own.
            async with timeouts.timeout(timeout):
                self.conn = await pool.acquire()
        except TimeoutError as exc:
            if not faults.pool_exhausted(pool, target.settings.pool_max_size):
                raise  # the wait was for a connect: the database's fault, which run_query reports
            _raise_if_deadline_spent(target)
            metrics.DB_ERRORS.labels(target.name, errors.PoolExhausted.code).inc()
            raise errors.PoolExhausted(
                f"all {target.settings.pool_max_size} connections to {target.name!r} stayed busy for "
                f"{timeout:.1f} s; retry, or raise databases.{target.name}.pool_max_size "
                f"(limits.acquire_timeout_s bounds the wait)", database=target.name,
            ) from exc
        return self.conn

    async def __aexit__(self, *exc: object) -> None:
        conn, self.conn = self.conn, None
        _abandoned(conn, self.target)
        try:
            if not await _release_now(conn, self.pool):
                await self.pool.release(conn, timeout=RELEASE_TIMEOUT_S)
        except Exception as error:  # noqa: BLE001 - never raised over the answer or the original error
            log.warning("connection_release_failed", database=self.target.name, error=repr(error))
            conn.terminate()


async def _release_now(conn: Any, pool: asyncpg.Pool) -> bool:
    """Return ``conn`` to ``pool`` through asyncpg's own return, without the shield task and timer that
    ``Pool.release`` wraps it in, when nothing in that return can wait: the run path rolled the transaction
    back and reset the session (the pool's reset then skips it, gateway.execute.pool), no cancel request is
    in flight, and the connection is open and not due to be closed. The return then runs to its end
    without suspending, so no cancellation can stop it half-way, which is all the shield is for; the pair
    cost a tenth of what a query's own round trips cost in this process. False, with nothing done, in
    any other case (or when the installed asyncpg lacks an internal read here): ``Pool.release`` does it."""
    try:
        holder, con = conn._holder, conn._con
        protocol = con._protocol
        if (holder._pool is not pool or con.is_closed() or protocol._is_cancelling()
                or protocol.is_in_transaction() or con._top_xact is not None
                or protocol.queries_count >= holder._max_queries or holder._generation != pool._generation
                or not statements.session_of(con).reset_done):
            return False
        on_release, release = con._on_release, holder.release
    except AttributeError:
        return False
    on_release()
    await release(None)
    return True


def _abandoned(conn: asyncpg.Connection, target: Target) -> bool:
    """Close ``conn`` at once when the request was cancelled past its deadline (True then).

    The server's own statement_timeout ends the statement at the deadline; a cancellation after it (the
    query's client-side guard, the request's hard timeout) means the server did not answer in time: it is
    frozen or cut off, and a cancel request, a ROLLBACK or the pool's reset would wait on it as long. Closing
    the socket costs the pool one connection, and the request ends now (:data:`request_deadline.CLEANUP_S`).
    """
    left = request_deadline.remaining()
    if _closed(conn) or not _cancelling() or left is None or left > 0:
        return _closed(conn)
    log.info("connection_abandoned", database=target.name, past_deadline_s=round(-left, 3))
    conn.terminate()
    return True


def _closed(conn: Any) -> bool:
    """Whether the connection is gone; a pool connection lost mid-query (or ended by the wire meter) has
    already left its proxy, whose ``is_closed`` would raise."""
    connection = statements.raw(conn)
    return connection is None or connection.is_closed()


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _cancel_landed(conn: asyncpg.Connection) -> None:
    """Wait (bounded) for asyncpg's cancel request of an interrupted query; without it a ROLLBACK now would
    find the connection busy. asyncpg has no public call for this; without the private one the pool's
    release still waits for it, and only logs that it rolled back a transaction."""
    protocol = getattr(conn, "_protocol", None)
    if protocol is not None and getattr(protocol, "_is_cancelling", lambda: False)():
        with contextlib.suppress(Exception):
            await protocol._wait_for_cancellation(RELEASE_TIMEOUT_S)


# Types whose values are small and fixed-width; everything else is measured.
_FIXED_WIDTH = frozenset({"int2", "int4", "int8", "float4", "float8", "bool", "date", "timestamp", "timestamptz",
                          "time", "timetz", "interval", "uuid", "oid", "money"})


async def _fetch(target: Target, cursor: Any, cap: int, columns: list[Column],
                 lease: Lease) -> tuple[list[list[Any]], bool]:
    """Rows in batches, bytes counted as they arrive; result_too_large as soon as the limit is crossed."""
    limit = target.settings.limits.max_result_bytes
    measured = [i for i, c in enumerate(columns) if c.type not in _FIXED_WIDTH]
    fixed = 64 + 40 * len(columns)  # the record, its row list and a fixed-width value per column
    rows, truncated, _ = await fetch_rows(cursor, cap, limit=limit, lease=lease, measured=measured,
                                          fixed_per_row=fixed, convert=lambda batch: _to_rows(batch, columns),
                                          too_large=lambda: _too_large(target))
    return rows, truncated


def _too_large(target: Target) -> errors.GatewayError:
    limit = target.settings.limits.max_result_bytes
    metrics.DB_ERRORS.labels(target.name, errors.ResultTooLarge.code).inc()
    return errors.ResultTooLarge(
        f"the result exceeds databases.{target.name}.limits.max_result_bytes ({limit} bytes); "
        "select fewer or narrower columns, or lower max_rows", limit=limit, database=target.name,
    )


def _to_rows(records: list[asyncpg.Record], columns: list[Column]) -> list[list[Any]]:
    rows = [list(r) for r in records]
    # Column by column: a value-by-value pass over every column cost more than the query's own decode.
    for i, column in enumerate(columns):
        convert = values.converter_for(column.type)
        if convert is not None:
            for row in rows:
                value = row[i]
                if value is not None:
                    row[i] = convert(value)
    return rows


def _query_error(database: str, exc: asyncpg.PostgresError, *, by_deadline: bool = False) -> errors.GatewayError:
    sqlstate = exc.sqlstate
    message = str(getattr(exc, "message", "") or exc)
    position = getattr(exc, "position", None)
    fields = {
        "sqlstate": sqlstate,
        "message": message,
        "position": int(position) if position else None,
        "hint": getattr(exc, "hint", None),
        "database": database,
    }
    error: errors.GatewayError
    if sqlstate == "57014" and "statement timeout" in message and by_deadline:
        error = request_deadline.exceeded(f"the query on {database!r}")
        error.extra.update(fields)
    elif sqlstate == "57014" and "statement timeout" in message:
        error = errors.StatementTimeout(
            f"query exceeded statement_timeout on {database!r}; raise databases.{database}.limits."
            "statement_timeout_ms if this query is expected to be slow", **fields,
        )
    elif sqlstate == "57014":
        error = errors.QueryCanceled(message, **fields)
    else:
        error = errors.QueryError(f"{sqlstate}: {message}", **fields)
    metrics.DB_ERRORS.labels(database, error.code).inc()
    return error
