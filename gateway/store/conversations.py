"""Conversations and their turns (``POST /v1/ask`` with ``conversation_id``).

Every read names the owner: a conversation another client started, or one past its retention, is simply not
found. Turns are numbered under a row lock on their conversation, so two follow-ups sent at once both land.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.observability.logging import get_logger
from gateway.store.batch import Batcher
from gateway.store.pool import Db, Store

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class StoredConversation:
    id: str
    owner: str  # Principal.owner (gateway.auth.ownership): only the owner may read or continue it
    database: str
    end_user: str | None = None  # who asked, and through which key or OAuth client (recorded, not checked)
    via: str | None = None


@dataclass(slots=True)
class StoredTurn:
    n: int
    request_id: str | None
    question: str
    status: str
    evidence: str = ""
    sql: str | None = None
    columns: list[dict[str, str]] = field(default_factory=list)  # [{"name", "type"}]
    row_count: int | None = None
    truncated: bool = False
    clarification: dict[str, Any] | None = None  # {"question", "options"}


async def get(db: Db, conversation_id: str, owner: str, retention_days: float) -> StoredConversation | None:
    """The conversation when ``owner`` started it and its latest turn is within the retention."""
    row = await db.fetchrow(
        "SELECT id, owner, database FROM conversations WHERE id = $1 AND owner = $2 "
        "AND last_turn_at > now() - make_interval(secs => $3)",
        conversation_id, owner, retention_days * 86_400.0,
    )
    return StoredConversation(row["id"], row["owner"], row["database"]) if row else None


async def turns(db: Db, conversation_id: str, *, latest: int = 50) -> list[StoredTurn]:
    """The latest ``latest`` turns, oldest first."""
    rows = await db.fetch(
        "SELECT * FROM (SELECT * FROM conversation_turns WHERE conversation_id = $1 ORDER BY n DESC LIMIT $2) t "
        "ORDER BY n", conversation_id, latest,
    )
    return [StoredTurn(n=r["n"], request_id=r["request_id"], question=r["question"], status=r["status"],
                       evidence=r["evidence"], sql=r["sql"], columns=r["columns"], row_count=r["row_count"],
                       truncated=r["truncated"], clarification=r["clarification"]) for r in rows]


async def add_turn(db: Db, conversation: StoredConversation, turn: StoredTurn) -> int:
    """Append ``turn`` (creating the conversation on its first turn); returns the turn's number.

    ``db`` must be a connection inside a transaction: the conversation row stays locked until it commits.
    """
    await db.execute(
        "INSERT INTO conversations (id, owner, database, end_user, via) VALUES ($1, $2, $3, $4, $5) "
        "ON CONFLICT (id) DO NOTHING",
        conversation.id, conversation.owner, conversation.database, conversation.end_user, conversation.via,
    )
    owner = await db.fetchval("SELECT owner FROM conversations WHERE id = $1 FOR UPDATE", conversation.id)
    if owner != conversation.owner:  # an id is 128 random bits; this only guards against a bug of ours
        raise ValueError("conversation id already belongs to another client")
    n = int(await db.fetchval("SELECT coalesce(max(n), 0) + 1 FROM conversation_turns WHERE conversation_id = $1",
                              conversation.id))
    await db.execute(
        """
        INSERT INTO conversation_turns (conversation_id, n, request_id, question, evidence, status, sql, columns,
                                        row_count, truncated, clarification)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        """,
        conversation.id, n, turn.request_id, turn.question, turn.evidence, turn.status, turn.sql, turn.columns,
        turn.row_count, turn.truncated, turn.clarification,
    )
    await db.execute("UPDATE conversations SET last_turn_at = now() WHERE id = $1", conversation.id)
    return n


async def add_first_turn(store: Store, conversation: StoredConversation, turn: StoredTurn,
                         retention_days: float) -> int:
    """The first turn of a new conversation, written together with those of concurrent requests
    (``gateway.store.batch``); returns the turn's number once its batch committed.

    Expired conversations are purged after each batch (the moment a new conversation starts), once for the
    batch rather than once per request.
    """
    batcher = store.batchers.get("first_turns")
    if batcher is None:
        batcher = store.batchers["first_turns"] = Batcher(
            lambda items: _first_turns(store, items, retention_days),
            lambda item: _first_turn_alone(store, item[0], item[1], retention_days),
        )
    n: int | None = await batcher.submit((conversation, turn))
    if n is None:  # the id was taken (128 random bits: a bug of ours): the single path checks the owner
        n = await _first_turn_alone(store, conversation, turn, retention_days)
    return n


async def _first_turn_alone(store: Store, conversation: StoredConversation, turn: StoredTurn,
                            retention_days: float) -> int:
    async with store.transaction() as conn:
        n = await add_turn(conn, conversation, turn)
    await purge(store.pool, retention_days)
    return n


async def _first_turns(store: Store, items: list[tuple[StoredConversation, StoredTurn]],
                       retention_days: float) -> list[int | None]:
    """New conversations and their first turns in one transaction; None for an id that already exists
    (or repeats within the batch): that one is written alone."""
    fresh: dict[str, tuple[StoredConversation, StoredTurn]] = {}
    for conversation, turn in items:
        fresh.setdefault(conversation.id, (conversation, turn))
    async with store.transaction() as conn:
        created = {r["id"] for r in await conn.fetch(
            "INSERT INTO conversations (id, owner, database, end_user, via) "
            "SELECT r.id, r.owner, r.database, r.end_user, r.via "
            "FROM jsonb_to_recordset($1::jsonb) AS r(id text, owner text, database text, end_user text, via text) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            [{"id": c.id, "owner": c.owner, "database": c.database, "end_user": c.end_user, "via": c.via}
             for c, _ in fresh.values()],
        )}
        await conn.execute(
            """
            INSERT INTO conversation_turns (conversation_id, n, request_id, question, evidence, status, sql, columns,
                                            row_count, truncated, clarification)
            SELECT r.conversation_id, 1, r.request_id, r.question, r.evidence, r.status, r.sql, r.columns,
                   r.row_count, r.truncated, r.clarification
            FROM jsonb_to_recordset($1::jsonb) AS r(conversation_id text, request_id text, question text,
                                                   evidence text, status text, sql text, columns jsonb,
                                                   row_count integer, truncated boolean, clarification jsonb)
            """,
            [{"conversation_id": c.id, "request_id": t.request_id, "question": t.question, "evidence": t.evidence,
              "status": t.status, "sql": t.sql, "columns": t.columns, "row_count": t.row_count,
              "truncated": t.truncated, "clarification": t.clarification}
             for c, t in fresh.values() if c.id in created],
        )
    try:
        await purge(store.pool, retention_days)
    except Exception as exc:  # noqa: BLE001 - the turns are committed; the next batch purges
        log.warning("conversation_purge_failed", error=repr(exc))
    return [1 if c.id in created and fresh[c.id][1] is t else None for c, t in items]


async def purge(db: Db, retention_days: float) -> int:
    """Delete conversations (and their turns) whose latest turn is older than the retention; returns how many."""
    done = await db.execute("DELETE FROM conversations WHERE last_turn_at < now() - make_interval(secs => $1)",
                            retention_days * 86_400.0)
    return int(done.split()[-1])
