"""Verified question/SQL pairs: few-shot examples found by trigram similarity, and exact matches.

A pair becomes verified when a user marks an answer `correct`, when a user's corrected SQL passed the
safety check and ran, or when a DBA adds it. Similarity is pg_trgm's ``similarity()`` on the question text,
ordered through the GiST index with the ``<->`` distance operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.store.pool import Db

ExampleSource = Literal["feedback", "correction", "dba"]
# Below this trigram similarity a stored question is not "like" the asked one at all.
MIN_SIMILARITY = 0.1


@dataclass(frozen=True, slots=True)
class VerifiedExample:
    id: int
    database: str
    question: str
    sql: str
    score: float = 1.0


def question_key(question: str) -> str:
    """The form two questions must share to count as the same question.

    >>> question_key("  How many   Orders were cancelled? ")
    'how many orders were cancelled'
    """
    return " ".join(question.casefold().split()).rstrip("?!.;: ")


async def add(
    db: Db, *, database: str, question: str, sql: str, source: ExampleSource, request_id: str | None = None,
) -> int:
    """Store a pair (or find the identical one already stored) and return its id."""
    key = question_key(question)
    row_id = await db.fetchval(
        """
        INSERT INTO verified_examples (database, question, question_key, sql, source, request_id)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (database, question_key, sql) DO NOTHING RETURNING id
        """,
        database, question.strip(), key, sql, source, request_id,
    )
    if row_id is None:
        row_id = await db.fetchval(
            "SELECT id FROM verified_examples WHERE database = $1 AND question_key = $2 AND sql = $3",
            database, key, sql,
        )
    return int(row_id)


async def similar(db: Db, database: str, question: str, k: int) -> list[VerifiedExample]:
    """Up to ``k`` verified pairs whose questions look most like ``question``, best first."""
    if k <= 0:
        return []
    rows = await db.fetch(
        """
        SELECT id, database, question, sql, similarity(question, $2) AS score
        FROM verified_examples
        WHERE database = $1 AND similarity(question, $2) >= $4
        ORDER BY question <-> $2, id DESC
        LIMIT $3
        """,
        database, question, k, MIN_SIMILARITY,
    )
    return [VerifiedExample(r["id"], r["database"], r["question"], r["sql"], float(r["score"])) for r in rows]


async def exact(db: Db, database: str, question: str) -> VerifiedExample | None:
    """The most recent verified pair for the same question (see :func:`question_key`), if any."""
    row = await db.fetchrow(
        """
        SELECT id, database, question, sql FROM verified_examples
        WHERE database = $1 AND question_key = $2 ORDER BY id DESC LIMIT 1
        """,
        database, question_key(question),
    )
    return VerifiedExample(row["id"], row["database"], row["question"], row["sql"]) if row else None


async def count(db: Db, database: str | None = None) -> int:
    return int(await db.fetchval(
        "SELECT count(*) FROM verified_examples WHERE $1::text IS NULL OR database = $1", database,
    ))


async def questions(db: Db, database: str, limit: int) -> list[str]:
    """The first ``limit`` verified questions of ``database``, oldest first (what works without an LLM)."""
    rows = await db.fetch(
        "SELECT question FROM verified_examples WHERE database = $1 GROUP BY question ORDER BY min(id) LIMIT $2",
        database, limit,
    )
    return [r["question"] for r in rows]
