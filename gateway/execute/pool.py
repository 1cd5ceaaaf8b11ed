"""One bounded asyncpg pool per target database, owned by the Gateway (gateway.service).

Connections are prepared once (codecs for faithful JSON) and reset after every query so that nothing a
request did to its session reaches the next one, except the prepared statements a principal keeps for
itself (gateway.execute.statements); a connection whose reset fails is discarded by asyncpg's pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import asyncpg

from gateway import deadline, errors, masking
from gateway.execute import faults, statements, values
from gateway.execute.backoff import ConnectBackoff
from gateway.execute.budget import ResultBudget
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.settings import DatabaseSettings, Settings

log = get_logger(__name__)

# Everything a session could carry over: cursors, LISTEN, advisory locks, settings, role, temp objects.
# Prepared statements are the one exception, and only within one principal: the run path keeps named
# statements per connection for the principal that prepared them and deallocates them before anyone else
# uses the connection (gateway.execute.statements). asyncpg's own statement cache is off
# (``statement_cache_size=0``), so nothing else is named.
SESSION_RESET_SQL = """
CLOSE ALL;
UNLISTEN *;
SELECT pg_advisory_unlock_all();
RESET ALL;
SET SESSION AUTHORIZATION DEFAULT;
DISCARD TEMP;
DISCARD SEQUENCES;
"""
# The full reset, for connections returned by anything but the run path (or when its reset failed):
# the session reset plus DEALLOCATE ALL, which leaves the connection holding nobody's statements.
RESET_SQL = statements.DEALLOCATE + SESSION_RESET_SQL

# How long closing a pool may wait for its connections before they are terminated instead.
POOL_CLOSE_TIMEOUT_S = 5.0


# Types decoded by the gateway's own functions so that every value becomes JSON (gateway.execute.values):
# (type, wire format, encoder, decoder).
_CODECS: tuple[tuple[str, Literal["binary", "tuple", "text"], Callable[[Any], Any], Callable[[Any], Any]], ...] = (
    ("json", "text", json.dumps, values.decode_json),
    ("jsonb", "text", json.dumps, values.decode_json),
    ("interval", "tuple", values.encode_interval, values.decode_interval),
    ("date", "tuple", values.encode_date, values.decode_date),
    ("timestamp", "tuple", values.encode_timestamp, values.decode_timestamp),
    ("timestamptz", "tuple", values.encode_timestamp, values.decode_timestamptz),
    ("time", "tuple", values.encode_time, values.decode_time),
    ("timetz", "tuple", values.encode_timetz, values.decode_timetz),
    ("pg_lsn", "binary", values.encode_pg_lsn, values.decode_pg_lsn),
    ("float4", "binary", values.encode_float4, values.decode_float4),
)


async def _init_connection(conn: asyncpg.Connection) -> None:
    await statements.detect_pooler(conn)
    for type_name, wire, encoder, decoder in _CODECS:
        await conn.set_type_codec(type_name, schema="pg_catalog", encoder=encoder, decoder=decoder, format=wire)


async def _reset_connection(conn: asyncpg.Connection) -> None:
    session = statements.session_of(conn)
    if session.reset_done:  # the run path reset it in the round trip of its ROLLBACK
        session.reset_done = False
        return
    session.forget()
    session.unsure = True
    await conn.execute(RESET_SQL)
    statements.cleared(session)


def why_unavailable(exc: BaseException, database: str, where: str | None = None) -> str:
    """A failure to reach ``database`` in words a person can act on (no exception class names).

    ``where`` is what the person wrote the DSN as (``--dsn``); by default the setting that holds it.
    """
    if isinstance(exc, faults.ConnectPaused):
        return (f"{why_unavailable(exc.cause, database, where)} (no new attempt for {exc.left_s:.1f} s: "
                "connect_backoff_s)")
    variable = f"NL2SQL_DATABASES__{database.upper()}__PASSWORD"
    password = "PGPASSWORD or ~/.pgpass" if where else f"{variable} or PGPASSWORD"
    where = where or f"databases.{database}.dsn"
    if isinstance(exc, TimeoutError):
        return "no answer in time (is the server up and reachable from here?)"
    if isinstance(exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError):
        return f"the server refused the login: {exc}; check the user in {where} and the password ({password})"
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return f"{exc}; check the database name in {where}"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused; check the host and port in {where} and that the server runs"
    if isinstance(exc, OSError):
        return f"cannot connect: {exc.strerror or exc}; check the host in {where}"
    return str(exc) or "the database did not answer"


async def probe(settings: DatabaseSettings, name: str, where: str) -> str | None:
    """Connect once to ``settings``'s database: ``None`` when it answers, else why not (see
    :func:`why_unavailable`). For start-up checks where a wrong DSN should stop the start, not be retried."""
    password = settings.password.get_secret_value() if settings.password else None
    try:
        conn = await asyncpg.connect(settings.dsn, password=password, timeout=settings.limits.acquire_timeout_s)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        return why_unavailable(exc, name, where)
    await conn.close()
    return None


async def create_pool(settings: DatabaseSettings, name: str = "") -> asyncpg.Pool:
    """A pool for one target; connects lazily when the database is down so start-up never fails on it."""
    password = settings.password.get_secret_value() if settings.password else None
    backoff = ConnectBackoff(name, first_s=settings.connect_backoff_s, max_s=settings.connect_backoff_max_s)
    kwargs = dict(
        # every new connection goes through the target's backoff: no login storm after a failed one
        connect=backoff.connect,
        dsn=settings.dsn, password=password, max_size=settings.pool_max_size, init=_init_connection,
        reset=_reset_connection, command_timeout=None, max_inactive_connection_lifetime=300,
        # asyncpg's connect timeout defaults to 60 s: a database behind a network cut would hold each new
        # connection that long; no request waits longer than acquire_timeout_s for one anyway.
        timeout=settings.limits.acquire_timeout_s,
        # asyncpg's statement cache is not partitioned by principal: a cached statement outlives the request
        # that made it, and pg_prepared_statements shows its text, literals included, to whoever uses the
        # connection next (another key, another role). gateway.execute.statements keeps them instead, per
        # principal.
        statement_cache_size=0,
    )
    try:
        return await asyncpg.create_pool(min_size=settings.pool_min_size, **kwargs)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        log.warning("pool_prewarm_failed", database=name, error=why_unavailable(exc, name))
        return await asyncpg.create_pool(min_size=0, **kwargs)


# 0 when the replica has replayed all it received (an idle primary writes nothing: no lag), else the age of
# the last transaction it replayed (of its start, when it has replayed none since).
LAG_SQL = """
SELECT pg_is_in_recovery() AS standby,
       CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM clock_timestamp()
                         - coalesce(pg_last_xact_replay_timestamp(), pg_postmaster_start_time())) END AS lag_s
"""


@dataclass
class Replica:
    """A read replica of a target: its pool, and what the last check found."""

    name: str  # replica1, replica2, ...: in metrics and logs (the DSN may name hosts)
    pool: asyncpg.Pool
    lag_s: float | None = None  # None: the last check got no answer
    healthy: bool = False

    async def check(self, database: str, max_lag_s: float, timeout: float = 1.0) -> None:
        try:
            async with asyncio.timeout(timeout):
                async with self.pool.acquire() as conn:
                    row = await conn.fetchrow(LAG_SQL)
            self.lag_s = float(row["lag_s"]) if row is not None else None
        except Exception as exc:  # noqa: BLE001 - any failure means "do not send queries there"
            if self.healthy:
                log.warning("replica_unavailable", database=database, replica=self.name,
                            error=why_unavailable(exc, database))
            self.lag_s = None
        healthy = self.lag_s is not None and self.lag_s <= max_lag_s
        if healthy != self.healthy and self.lag_s is not None:
            log.info("replica_in_use" if healthy else "replica_lagging", database=database, replica=self.name,
                     lag_s=round(self.lag_s, 3), max_lag_s=max_lag_s)
        self.healthy = healthy
        metrics.REPLICA_LAG.labels(database, self.name).set(-1 if self.lag_s is None else self.lag_s)


@dataclass
class Target:
    """A named database clients may query, with its settings and pool."""

    name: str
    settings: DatabaseSettings
    pool: asyncpg.Pool
    # The hidden names of this database's live policy (gateway.masking.install); none until installed.
    hidden_names: Callable[[], Sequence[str]] = field(default=lambda: ())

    def mask_error(self, error: errors.GatewayError) -> errors.GatewayError:
        """``error`` with hidden names masked: where a database error becomes a gateway error."""
        return masking.mask_error(error, self.hidden_names())
    results: ResultBudget = field(default_factory=ResultBudget)  # shared by all targets of a process
    replicas: list[Replica] = field(default_factory=list)
    _turn: int = 0

    def routes(self) -> list[tuple[str, asyncpg.Pool]]:
        """Where a client query may run, in order: the healthy replicas, next one first (round robin), then
        the primary."""
        healthy = [r for r in self.replicas if r.healthy]
        if healthy:
            self._turn = (self._turn + 1) % len(healthy)
            healthy = healthy[self._turn:] + healthy[:self._turn]
        return [*((r.name, r.pool) for r in healthy), ("primary", self.pool)]

    def replica_failed(self, name: str) -> None:
        """Stop sending queries to replica ``name`` until its next good check."""
        for replica in self.replicas:
            if replica.name == name:
                replica.healthy = False

    async def check_replicas(self) -> None:
        await asyncio.gather(*(r.check(self.name, self.settings.replica_max_lag_s) for r in self.replicas))

    def client_timeout_s(self) -> float:
        """The client-side bound on one of the gateway's own queries here (introspection, samples, value
        matching, privilege reports): the connection wait plus the statement_timeout plus a grace, capped by
        the request's deadline. ``statement_timeout`` cannot fire on a server that stopped answering (a
        network cut, a frozen host); this can."""
        limits = self.settings.limits
        own = limits.acquire_timeout_s + limits.statement_timeout_ms / 1000 + deadline.NET_GRACE_S
        left = deadline.remaining()
        return own if left is None else min(own, max(left, 0.0) + deadline.NET_GRACE_S)

    async def ping(self, timeout: float) -> str:
        """'ok' when the database answers ``SELECT 1`` within ``timeout`` seconds, else why not."""
        try:
            async with asyncio.timeout(timeout):
                async with self.pool.acquire() as conn:
                    await conn.fetchval("SELECT 1")
            return "ok"
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready", with its reason
            return f"unavailable: {why_unavailable(exc, self.name)}"

    def pool_stats(self) -> tuple[int, int]:
        """(open connections, connections in use)."""
        size = self.pool.get_size()
        return size, size - self.pool.get_idle_size()


@dataclass
class Targets:
    """All configured targets, by name."""

    by_name: dict[str, Target] = field(default_factory=dict)
    _watch: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, settings: Settings) -> Targets:
        targets = cls()
        results = ResultBudget(settings.backpressure.result_bytes_in_flight, settings.backpressure.result_wait_s)
        for name, db in settings.databases.items():
            target = Target(name, db, await create_pool(db, name), results=results)
            for n, dsn in enumerate(db.replica_dsns, start=1):
                replica = db.model_copy(update={"dsn": dsn, "pool_min_size": 0, "replica_dsns": []})
                target.replicas.append(Replica(f"replica{n}", await create_pool(replica, f"{name}/replica{n}")))
            targets.by_name[name] = target
        watched = [t for t in targets.by_name.values() if t.replicas]
        if watched:
            await asyncio.gather(*(t.check_replicas() for t in watched))  # routed from the first query on
            targets._watch = asyncio.create_task(_watch_replicas(watched), name="replica-checks")
        return targets

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
        pools = [(t.name, t.pool) for t in self.by_name.values()]
        pools += [(f"{t.name}/{r.name}", r.pool) for t in self.by_name.values() for r in t.replicas]
        for name, pool in pools:
            try:
                # A graceful close waits for each connection's goodbye: bounded, as a server that stopped
                # answering would hold the shutdown (a drain, a CLI command) as long as it stays stopped.
                async with asyncio.timeout(POOL_CLOSE_TIMEOUT_S):
                    await pool.close()
            except Exception as exc:  # noqa: BLE001 - closing must go on for the other pools
                log.warning("pool_close_failed", database=name, error=repr(exc))
                pool.terminate()

    def get(self, name: str) -> Target | None:
        return self.by_name.get(name)


async def _watch_replicas(targets: list[Target]) -> None:
    """Measure every replica's health and lag, each target at its own replica_check_s."""
    due = {t.name: 0.0 for t in targets}
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(min(t.settings.replica_check_s for t in targets) / 2)
        now = loop.time()
        checks = [t for t in targets if now >= due[t.name]]
        for target in checks:
            due[target.name] = now + target.settings.replica_check_s
        await asyncio.gather(*(t.check_replicas() for t in checks))
