"""Named prepared statements kept on each pooled connection, partitioned by principal.

A dashboard sends the same statements again and again; parsing and planning them anew on every request is
most of what Postgres spends on it. So a connection keeps the statements it prepared, by SQL text (the last
``MAX_STATEMENTS`` and at most ``MAX_KEPT_CHARS`` of SQL text, only texts up to ``MAX_SQL_CHARS``: a
backend holds each kept statement's parse tree and plan, several times its text), for the **one principal**
that prepared them: the partition is the API key and the Postgres role it runs as
(:attr:`gateway.auth.keys.Principal.partition`).

- When a connection is used by another partition than last time, ``DEALLOCATE ALL`` goes first in the same
  round trip as the BEGIN (:func:`claim`), and the connection counts as *unsure* until that round trip
  has completed: a failure half-way never leaves another principal's statements usable, on the server or
  in this process. A statement prepared under one key's role and visibility is never run for another key,
  and ``pg_prepared_statements`` never shows one key's SQL text to another.
- Callers without a principal (the ask pipeline, MAGIC, evaluation) never name a statement; their
  connections get the full session reset, ``DEALLOCATE ALL`` included, when they are returned.
- A statement whose tables changed under it (``InvalidCachedStatementError``) is dropped and prepared
  again by the caller (gateway.execute.run), once.

Behind a pooler in transaction mode (PgBouncer ``pool_mode = transaction``) each transaction may run on
another server connection, shared with other clients: nothing is kept there. :func:`detect_pooler` marks
such a connection when it is opened (the process id in the server's BackendKeyData is not the backend's
own: the pooler hands out keys of its own) and its statements are all unnamed.

What is kept lives in this process only, keyed by the connection object: a connection that is closed or
replaced takes its statements with it.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

MAX_STATEMENTS = 64  # per connection; the least recently used one is closed when a new one would exceed it
MAX_SQL_CHARS = 16_384  # longer texts are one-offs: prepared unnamed, never kept
MAX_KEPT_CHARS = 262_144  # per connection: 64 long texts would otherwise hold tens of MB in each backend
DEALLOCATE = "DEALLOCATE ALL;\n"


class Session:
    """What this process knows about one connection's session."""

    __slots__ = ("__weakref__", "partition", "unsure", "statements", "kept_chars", "reset_done", "names",
                 "pooled")

    def __init__(self) -> None:
        self.partition: str | None = None  # whose statements the connection holds (None: nobody's)
        self.unsure = False  # a DEALLOCATE was sent and its answer not seen: the server may hold anything
        self.statements: OrderedDict[str, Any] = OrderedDict()  # SQL text -> asyncpg's statement state
        self.kept_chars = 0  # the length of every kept text, summed
        self.reset_done = False  # the run path already reset the session; the pool's reset may skip it
        self.names = 0
        self.pooled = False  # behind a transaction pooler: each transaction may run on another backend

    def forget(self) -> None:
        """Make every kept statement unusable here; the caller removes them on the server."""
        for state in self.statements.values():
            state.detach()
            state.mark_closed()  # not scheduled for a Close: DEALLOCATE ALL removes it
        self.statements.clear()
        self.kept_chars = 0


_sessions: weakref.WeakKeyDictionary[asyncpg.Connection, Session] = weakref.WeakKeyDictionary()


def raw(conn: Any) -> asyncpg.Connection:
    """The driver's connection behind a pool proxy (the proxy is invalid once the connection is released)."""
    return conn._con if isinstance(conn, PoolConnectionProxy) else conn  # type: ignore[no-any-return]


def session_of(conn: Any) -> Session:
    connection = raw(conn)
    session = _sessions.get(connection)
    if session is None:
        session = _sessions[connection] = Session()
    return session


def claim(session: Session, partition: str | None) -> str:
    """What must precede the BEGIN for ``partition`` to use this connection: ``DEALLOCATE ALL`` when the
    connection may hold another partition's statements, else nothing. Call :func:`claimed` once the round
    trip that carried it has succeeded."""
    if session.partition == partition and not session.unsure:
        return ""
    session.forget()
    session.partition = None
    session.unsure = True
    return DEALLOCATE


def claimed(session: Session, partition: str | None) -> None:
    session.partition = partition
    session.unsure = False


def cleared(session: Session) -> None:
    """The session was reset with ``DEALLOCATE ALL`` (its round trip succeeded): it holds nobody's statements."""
    session.forget()
    session.partition = None
    session.unsure = False


async def detect_pooler(conn: Any) -> bool:
    """Whether ``conn`` reaches Postgres through a pooler (marked on its session). A direct connection's
    BackendKeyData names its backend; PgBouncer (and other poolers) send a key of their own, so the pid
    differs from ``pg_backend_pid()``. In session mode this only costs the kept statements."""
    pooled = raw(conn).get_server_pid() != await conn.fetchval("SELECT pg_backend_pid()")
    session_of(conn).pooled = pooled
    return pooled


async def prepare(conn: Any, session: Session, sql: str, partition: str | None) -> Any:
    """asyncpg's statement state for ``sql``: the kept one for this partition, else a new one (kept when the
    partition and size allow, else the unnamed statement, which the next Parse replaces)."""
    if (partition is None or session.pooled or session.partition != partition or session.unsure
            or len(sql) > MAX_SQL_CHARS):
        return (await conn.prepare(sql, name=False))._state
    state = session.statements.get(sql)
    if state is not None:
        if not state.closed:
            session.statements.move_to_end(sql)
            return state
        del session.statements[sql]  # closed under us: replaced below, and no longer counted
        session.kept_chars -= len(sql)
    session.names += 1
    stmt = await conn.prepare(sql, name=f"nl2sql_{session.names}")
    state = stmt._state
    state.attach()  # held by the session, not by the request's PreparedStatement
    session.statements[sql] = state
    session.kept_chars += len(sql)
    while len(session.statements) > MAX_STATEMENTS or session.kept_chars > MAX_KEPT_CHARS:
        text, oldest = session.statements.popitem(last=False)
        session.kept_chars -= len(text)
        _close(conn, oldest)
    return state


def drop(conn: Any, session: Session, sql: str) -> None:
    """Forget the kept statement for ``sql`` (its plan went stale); asyncpg closes it on the server."""
    state = session.statements.pop(sql, None)
    if state is not None:
        session.kept_chars -= len(sql)
        _close(conn, state)


def _close(conn: Any, state: Any) -> None:
    # Detached and unreferenced, asyncpg marks it closed and sends a Close before its next Parse.
    state.detach()
    raw(conn)._maybe_gc_stmt(state)
