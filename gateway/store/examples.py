"""Question/SQL pairs: proposed by feedback, reviewed by a DBA, used once approved.

A pair is *proposed* when a client marks an answer ``correct`` or sends a corrected SQL that passed the
safety check and ran (see ``gateway.feedback``). A dba or admin key approves or rejects it (the
``/v1/examples`` routes, ``nl2sql-gateway examples``); feedback from a dba or admin key, and pairs a DBA adds
(source ``dba``), are approved at once. Only *approved* pairs are returned by :func:`similar` and
:func:`exact`, so nothing one client teaches reaches another client's prompt or answer before review.
Similarity is pg_trgm's ``similarity()`` on the question text, ordered through the GiST index with the
``<->`` distance operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from gateway.store.pool import Db

ExampleSource = Literal["feedback", "correction", "dba"]
ExampleStatus = Literal["proposed", "approved", "rejected"]
STATUSES: tuple[ExampleStatus, ...] = ("proposed", "approved", "rejected")
# Below this trigram similarity a stored question is not "like" the asked one at all.
MIN_SIMILARITY = 0.1


@dataclass(frozen=True, slots=True)
class VerifiedExample:
    id: int
    database: str
    question: str
    sql: str
    score: float = 1.0


@dataclass(frozen=True, slots=True)
class StoredExample:
    """A pair with its review state, for the review routes and CLI."""

    id: int
    database: str
    question: str
    sql: str
    source: str
    status: str
    request_id: str | None
    proposed_by: str
    proposed_at: datetime
    reviewed_by: str | None
    reviewed_at: datetime | None
    review_note: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "database": self.database, "question": self.question, "sql": self.sql,
            "source": self.source, "status": self.status, "request_id": self.request_id,
            "proposed_by": self.proposed_by, "proposed_at": self.proposed_at.isoformat(),
            "reviewed_by": self.reviewed_by,
            "reviewed_at": self.reviewed_at.isoformat() if self.reviewed_at else None,
            "review_note": self.review_note,
        }


def _stored(row: Any) -> StoredExample:
    return StoredExample(
        id=row["id"], database=row["database"], question=row["question"], sql=row["sql"], source=row["source"],
        status=row["status"], request_id=row["request_id"], proposed_by=row["proposed_by"],
        proposed_at=row["created_at"], reviewed_by=row["reviewed_by"], reviewed_at=row["reviewed_at"],
        review_note=row["review_note"],
    )


def question_key(question: str) -> str:
    """The form two questions must share to count as the same question.

    >>> question_key("  How many   Orders were cancelled? ")
    'how many orders were cancelled'
    """
    return " ".join(question.casefold().split()).rstrip("?!.;: ")


async def add(
    db: Db, *, database: str, question: str, sql: str, source: ExampleSource, request_id: str | None = None,
    proposed_by: str = "unknown", approved_by: str | None = None, end_user: str | None = None,
    via: str | None = None,
) -> int:
    """Store a pair (or find the identical one already stored) and return its id.

    The pair is approved when ``approved_by`` names a reviewer, or when a DBA wrote it (source ``dba``);
    otherwise it is proposed. An identical pair that is still proposed becomes approved when a reviewer
    sends it again; a rejected pair stays rejected (a DBA decided).
    """
    key = question_key(question)
    if source == "dba" and approved_by is None:
        approved_by = proposed_by
    row_id = await db.fetchval(
        """
        INSERT INTO verified_examples (database, question, question_key, sql, source, request_id, status,
                                       proposed_by, end_user, via)
        VALUES ($1, $2, $3, $4, $5, $6, 'proposed', $7, $8, $9)
        ON CONFLICT (database, question_key, sql) DO NOTHING RETURNING id
        """,
        database, question.strip(), key, sql, source, request_id, proposed_by, end_user, via,
    )
    if row_id is None:
        row_id = await db.fetchval(
            "SELECT id FROM verified_examples WHERE database = $1 AND question_key = $2 AND sql = $3",
            database, key, sql,
        )
    if approved_by is not None:  # one path for every approval, so the corrections behind it follow
        await review(db, int(row_id), "approved", reviewer=approved_by, note=f"sent by {approved_by}")
    return int(row_id)


async def similar(db: Db, database: str, question: str, k: int) -> list[VerifiedExample]:
    """Up to ``k`` approved pairs whose questions look most like ``question``, best first."""
    if k <= 0:
        return []
    rows = await db.fetch(
        """
        SELECT id, database, question, sql, similarity(question, $2) AS score
        FROM verified_examples
        WHERE database = $1 AND status = 'approved' AND similarity(question, $2) >= $4
        ORDER BY question <-> $2, id DESC
        LIMIT $3
        """,
        database, question, k, MIN_SIMILARITY,
    )
    return [VerifiedExample(r["id"], r["database"], r["question"], r["sql"], float(r["score"])) for r in rows]


async def exact(db: Db, database: str, question: str) -> VerifiedExample | None:
    """The most recent approved pair for the same question (see :func:`question_key`), if any."""
    row = await db.fetchrow(
        """
        SELECT id, database, question, sql FROM verified_examples
        WHERE database = $1 AND question_key = $2 AND status = 'approved' ORDER BY id DESC LIMIT 1
        """,
        database, question_key(question),
    )
    return VerifiedExample(row["id"], row["database"], row["question"], row["sql"]) if row else None


async def get(db: Db, example_id: int) -> StoredExample | None:
    row = await db.fetchrow("SELECT * FROM verified_examples WHERE id = $1", example_id)
    return _stored(row) if row else None


async def list_by_status(db: Db, status: ExampleStatus | None = None, database: str | None = None,
                         limit: int = 100) -> list[StoredExample]:
    """Pairs in one status (all when None), oldest first: the review queue reads top to bottom."""
    rows = await db.fetch(
        """
        SELECT * FROM verified_examples
        WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR database = $2)
        ORDER BY id LIMIT $3
        """,
        status, database, limit,
    )
    return [_stored(r) for r in rows]


async def review(db: Db, example_id: int, decision: Literal["approved", "rejected"], *, reviewer: str,
                 note: str | None = None) -> StoredExample | None:
    """Move a pair to ``decision`` if the move is allowed; None when it is not (or the pair does not exist).

    Allowed: proposed -> approved, proposed -> rejected, approved -> rejected (a DBA withdraws a pair).
    A rejected pair stays rejected. The corrections that taught the pair follow the decision: approved
    ones count as reviewed for MAGIC, rejected ones leave its queue (see the 0003 migration).
    """
    allowed_from = ["proposed"] if decision == "approved" else ["proposed", "approved"]
    row = await db.fetchrow(
        """
        UPDATE verified_examples SET status = $2, reviewed_by = $3, reviewed_at = now(), review_note = $4
        WHERE id = $1 AND status = ANY($5::text[]) RETURNING *
        """,
        example_id, decision, reviewer, note, allowed_from,
    )
    if row is None:
        return None
    if row["request_id"] is not None:
        if decision == "approved":
            await db.execute(
                """
                UPDATE corrections SET reviewed_by = $3, reviewed_at = now()
                WHERE request_id = $1 AND corrected_sql = $2 AND reviewed_at IS NULL
                """,
                row["request_id"], row["sql"], reviewer,
            )
        else:
            await db.execute(
                """
                UPDATE corrections SET outcome = 'rejected', processed_at = coalesce(processed_at, now()),
                                       reviewed_by = NULL, reviewed_at = NULL
                WHERE request_id = $1 AND corrected_sql = $2 AND source <> 'dba'
                """,
                row["request_id"], row["sql"],
            )
    return _stored(row)


async def count(db: Db, database: str | None = None, status: ExampleStatus | None = "approved") -> int:
    return int(await db.fetchval(
        "SELECT count(*) FROM verified_examples WHERE ($1::text IS NULL OR database = $1) "
        "AND ($2::text IS NULL OR status = $2)", database, status,
    ))


async def questions(db: Db, database: str, limit: int) -> list[str]:
    """The first ``limit`` verified (approved) questions of ``database``, oldest first (what works without an
    LLM; the console's starter questions). A proposed or rejected pair answers nothing."""
    rows = await db.fetch(
        "SELECT question FROM verified_examples WHERE database = $1 AND status = 'approved' "
        "GROUP BY question ORDER BY min(id) LIMIT $2",
        database, limit,
    )
    return [r["question"] for r in rows]



async def approved_pairs(db: Db, database: str, limit: int) -> list[tuple[str, str]]:
    """The first ``limit`` verified (approved) questions of ``database`` with their SQL, oldest first (the
    first pair of a question asked twice)."""
    rows = await db.fetch(
        "SELECT question, sql FROM (SELECT DISTINCT ON (question) question, sql, id FROM verified_examples "
        "WHERE database = $1 AND status = 'approved' ORDER BY question, id) first ORDER BY id LIMIT $2",
        database, limit,
    )
    return [(r["question"], r["sql"]) for r in rows]


async def held_out(db: Db, databases: list[str], *, learnt_from: list[int], limit: int) -> list[StoredExample]:
    """Approved pairs of ``databases`` that the corrections ``learnt_from`` did not teach, most recent first.

    A pair counts as taught by a correction when it came from the same request or asks the same question
    (see :func:`question_key`): replaying it would grade a guideline on the answer it was written from.
    """
    taught = await db.fetch("SELECT request_id, question FROM corrections WHERE id = ANY($1::bigint[])",
                            learnt_from)
    requests = [r["request_id"] for r in taught if r["request_id"] is not None]
    keys = sorted({question_key(r["question"]) for r in taught})
    rows = await db.fetch(
        """
        SELECT * FROM verified_examples
        WHERE status = 'approved' AND database = ANY($1::text[])
          AND NOT (question_key = ANY($2::text[]))
          AND (request_id IS NULL OR NOT (request_id = ANY($3::text[])))
        ORDER BY id DESC LIMIT $4
        """,
        databases, keys, requests, limit,
    )
    return [_stored(r) for r in rows]


async def review_context(db: Db, ids: list[int]) -> dict[int, dict[str, Any]]:
    """What a reviewer needs beside each example: the analyst's feedback (verdict and note) and the original
    answer it came from (its SQL, status and row count, from the request audit: no rows are kept)."""
    rows = await db.fetch(
        """
        SELECT e.id, f.verdict, f.note, a.final_sql, a.status, a.attempts
        FROM verified_examples e
        LEFT JOIN LATERAL (SELECT verdict, note FROM feedback WHERE example_id = e.id ORDER BY id DESC LIMIT 1) f
               ON true
        LEFT JOIN request_audit a ON a.request_id = e.request_id
        WHERE e.id = ANY($1::bigint[])
        """,
        ids,
    )
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        attempts = r["attempts"] or []
        chosen = [a for a in attempts if isinstance(a, dict) and a.get("sql") == r["final_sql"]]
        out[r["id"]] = {"verdict": r["verdict"], "note": r["note"], "original_sql": r["final_sql"],
                        "original_status": r["status"],
                        "original_row_count": chosen[-1].get("row_count") if chosen else None}
    return out
