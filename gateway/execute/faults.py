"""Driver and socket faults of the target and store pools, sorted once into what a client is told.

Every ``except`` around a pool in the gateway goes through :func:`classify`: a fault is the database's or
the network's (a lost connection, a server shutting down, a refused login, a driver whose protocol state
broke when the socket died), never the client's SQL. Faults answer 503; an error that is none of these
(the client's SQL, a bug of ours) is left alone for the caller to report. The original exception is always
chained (``raise ... from exc``), and a clean-up that fails after a fault is logged, never raised over it.
"""

from __future__ import annotations

import asyncio
from enum import Enum

import asyncpg

from gateway import errors


class Fault(Enum):
    UNAVAILABLE = "unavailable"  # connection lost or refused, server shutting down or starting, protocol broken
    AUTH = "auth"  # the server refused the gateway's own credentials: an operator must fix a setting
    MISCONFIGURED = "misconfigured"  # the configured database does not exist


# Every exception type that may be a fault; ``classify`` decides for the instance. For ``except`` clauses.
FAULTS: tuple[type[BaseException], ...] = (
    OSError,  # ConnectionError and socket errors
    asyncio.TimeoutError,  # a connect or a reply that never came (TimeoutError since 3.11)
    asyncpg.PostgresConnectionError,  # 08xxx, ConnectionDoesNotExistError among them
    asyncpg.exceptions.OperatorInterventionError,  # 57xxx: admin/crash shutdown, cannot connect now
    asyncpg.exceptions.InsufficientResourcesError,  # 53xxx: too many connections, out of memory, disk full
    asyncpg.exceptions.InvalidAuthorizationSpecificationError,  # 28000/28P01: role or password refused
    asyncpg.exceptions.InvalidCatalogNameError,  # 3D000: the configured database does not exist
    asyncpg.InterfaceError,  # the driver: connection closed, another operation in progress
    asyncpg.exceptions.InternalClientError,  # the driver's protocol state broke (socket died mid-message)
)


class ConnectPaused(ConnectionError):
    """No new connection to a target is tried now: it is backing off after failed attempts
    (:mod:`gateway.execute.backoff`). Classified as its last failure, so a wrong password keeps naming
    the password setting."""

    def __init__(self, database: str, cause: BaseException, left_s: float, failures: int) -> None:
        super().__init__(f"no new connection to {database!r} is tried for {left_s:.1f} s more after {failures} "
                         f"failed attempt(s) (databases.{database}.connect_backoff_s); the last failed with "
                         f"{type(cause).__name__}: {cause}")
        self.cause = cause
        self.left_s = left_s


def classify(exc: BaseException, *, connection_closed: bool | None = None) -> Fault | None:
    """The fault ``exc`` is, or None when it is not the database's or the network's (the SQL's, a bug).

    ``connection_closed`` tells, for a driver ``InterfaceError``, whether its connection is gone; an open
    connection's ``InterfaceError`` that is not about its state is the statement's (e.g. it expects bind
    parameters the gateway never sends).
    """
    if isinstance(exc, ConnectPaused):
        return classify(exc.cause) or Fault.UNAVAILABLE
    if isinstance(exc, asyncpg.exceptions.InvalidAuthorizationSpecificationError):
        return Fault.AUTH
    if isinstance(exc, asyncpg.exceptions.InvalidCatalogNameError):
        return Fault.MISCONFIGURED
    if isinstance(exc, asyncpg.exceptions.QueryCanceledError):
        return None  # 57014 is a statement_timeout or a cancel: the query's outcome, reported as such
    if isinstance(exc, asyncpg.InterfaceError):
        # asyncpg's own wording for a connection in the wrong state; all other InterfaceErrors on an open
        # connection come from the statement.
        if connection_closed is False and not str(exc).startswith("cannot perform operation"):
            return None
        return Fault.UNAVAILABLE
    if isinstance(exc, FAULTS):
        return Fault.UNAVAILABLE
    return None


def env_name(*path: str) -> str:
    """The environment variable that sets a setting: ``NL2SQL_DATABASES__SALES__PASSWORD``."""
    return "NL2SQL_" + "__".join(p.upper() for p in path)


def database_error(database: str, exc: BaseException, fault: Fault) -> errors.DatabaseUnavailable:
    """The 503 for a target database's fault; its detail names the setting to fix when one is at fault."""
    cause = f"{type(exc).__name__}: {exc}".rstrip(": ")
    if fault is Fault.AUTH:
        detail = (f"database {database!r} refused the gateway's login ({cause}); check databases.{database}.dsn "
                  f"and databases.{database}.password (environment variable "
                  f"{env_name('databases', database, 'password')})")
        return errors.DatabaseUnavailable(detail, database=database, setting=f"databases.{database}.password")
    if fault is Fault.MISCONFIGURED:
        detail = f"database {database!r} does not exist on its server ({cause}); check databases.{database}.dsn"
        return errors.DatabaseUnavailable(detail, database=database, setting=f"databases.{database}.dsn")
    return errors.DatabaseUnavailable(f"database {database!r} is unavailable: {cause}", database=database)


def store_error(exc: BaseException, fault: Fault, doing: str) -> errors.StoreUnavailable:
    """The 503 for a store fault; ``doing`` says what was not done (e.g. "the feedback was not recorded")."""
    cause = type(exc).__name__
    if fault is Fault.AUTH:
        return errors.StoreUnavailable(
            f"the store refused the gateway's login ({cause}); check store.dsn and store.password (environment "
            f"variable {env_name('store', 'password')}); {doing}", setting="store.password")
    if fault is Fault.MISCONFIGURED:
        return errors.StoreUnavailable(f"the store database does not exist ({cause}); check store.dsn; {doing}",
                                       setting="store.dsn")
    return errors.StoreUnavailable(f"the store database did not answer ({cause}); {doing}")


def pool_exhausted(pool: asyncpg.Pool, max_size: int) -> bool:
    """Whether a timed-out acquire waited for a busy pool (saturation) rather than for a connect (an outage).

    Every connection of a full pool is open and none is idle; a pool that was still connecting was waiting
    on the database.
    """
    return bool(pool.get_size() >= max_size and pool.get_idle_size() == 0)
