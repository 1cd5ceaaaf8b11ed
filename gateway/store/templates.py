"""Templates: DBA-approved parameterized SQL that answers matching questions without the LLM (``trusted``).

A template is stored with its parameters (each bound to a column) and example questions with ``{name}``
slots; :mod:`gateway.templates` reads and matches them, :mod:`gateway.pipeline.trusted` runs them. Usage is
counted here after each answer a template gave. :func:`suggestions` reads the log for questions asked often
whose answers were confirmed (feedback ``correct``) or approved as examples: candidates for new templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.store.pool import Db


@dataclass(frozen=True, slots=True)
class StoredTemplate:
    id: int
    name: str
    database: str
    description: str
    sql: str
    parameters: list[dict[str, Any]]
    questions: list[str]
    example_id: int | None
    created_by: str
    created_at: datetime
    uses: int
    last_used_at: datetime | None


def _stored(row: Any) -> StoredTemplate:
    return StoredTemplate(
        id=row["id"], name=row["name"], database=row["database"], description=row["description"], sql=row["sql"],
        parameters=list(row["parameters"]), questions=list(row["questions"]), example_id=row["example_id"],
        created_by=row["created_by"], created_at=row["created_at"], uses=int(row["uses"]),
        last_used_at=row["last_used_at"],
    )


async def add(db: Db, *, name: str, database: str, description: str, sql: str, parameters: list[dict[str, Any]],
              questions: list[str], example_id: int | None, created_by: str) -> StoredTemplate | None:
    """Store a new template; None when the name is taken."""
    row = await db.fetchrow(
        """
        INSERT INTO templates (name, database, description, sql, parameters, questions, example_id, created_by)
        VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8)
        ON CONFLICT (name) DO NOTHING RETURNING *
        """,
        name, database, description, sql, parameters, questions, example_id, created_by,
    )
    return _stored(row) if row else None


async def get(db: Db, name: str) -> StoredTemplate | None:
    row = await db.fetchrow("SELECT * FROM templates WHERE name = $1", name)
    return _stored(row) if row else None


async def list_all(db: Db, database: str | None = None) -> list[StoredTemplate]:
    """Every template (of ``database``), by name."""
    rows = await db.fetch("SELECT * FROM templates WHERE ($1::text IS NULL OR database = $1) ORDER BY name",
                          database)
    return [_stored(r) for r in rows]


async def delete(db: Db, name: str) -> bool:
    return (await db.execute("DELETE FROM templates WHERE name = $1", name)) != "DELETE 0"


async def used(db: Db, name: str) -> None:
    await db.execute("UPDATE templates SET uses = uses + 1, last_used_at = now() WHERE name = $1", name)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A question asked often whose answers were confirmed: a candidate template for a DBA to review."""

    database: str
    question: str  # the most recent spelling
    question_key: str
    sql: str  # the SQL of its most recent confirmed answer
    asked: int  # answers audited for the question
    confirmed: int  # of them, marked correct by their owner
    approved: int  # approved examples with the question
    example_id: int | None  # the most recent approved example, to promote

    def as_dict(self) -> dict[str, Any]:
        return {"database": self.database, "question": self.question, "sql": self.sql, "asked": self.asked,
                "confirmed": self.confirmed, "approved": self.approved, "example_id": self.example_id}


async def suggestions(db: Db, databases: list[str] | None, *, min_count: int, limit: int) -> list[Suggestion]:
    """Questions (compared as :func:`gateway.store.examples.question_key` compares them) that were asked at
    least ``min_count`` times and got at least one ``correct`` verdict or an approved example, most asked
    first. The key is computed in SQL the same way: case folded, spaces collapsed, end punctuation off."""
    rows = await db.fetch(
        r"""
        WITH asked AS (
            SELECT a.request_id, a.database, a.question, a.final_sql, a.created_at,
                   rtrim(lower(regexp_replace(btrim(a.question), '\s+', ' ', 'g')), '?!.;: ') AS question_key,
                   EXISTS (SELECT 1 FROM feedback f WHERE f.request_id = a.request_id
                                                      AND f.verdict = 'correct') AS confirmed
            FROM request_audit a
            WHERE a.status IN ('ok', 'suspicious') AND ($1::text[] IS NULL OR a.database = ANY($1::text[]))
        ),
        grouped AS (
            SELECT database, question_key, count(*) AS asked, count(*) FILTER (WHERE confirmed) AS confirmed,
                   (array_agg(question ORDER BY created_at DESC))[1] AS question,
                   (array_agg(final_sql ORDER BY confirmed DESC, created_at DESC))[1] AS sql
            FROM asked GROUP BY database, question_key
        )
        SELECT g.*, e.approved, e.example_id, e.sql AS example_sql
        FROM grouped g
        LEFT JOIN LATERAL (
            SELECT count(*) AS approved, max(id) AS example_id,
                   (array_agg(sql ORDER BY id DESC))[1] AS sql
            FROM verified_examples v
            WHERE v.database = g.database AND v.question_key = g.question_key AND v.status = 'approved'
        ) e ON true
        WHERE g.asked >= $2 AND (g.confirmed > 0 OR e.approved > 0)
        ORDER BY g.asked DESC, g.confirmed DESC, g.question_key
        LIMIT $3
        """,
        databases, min_count, limit,
    )
    return [Suggestion(database=r["database"], question=r["question"], question_key=r["question_key"],
                       sql=r["example_sql"] or r["sql"] or "", asked=int(r["asked"]), confirmed=int(r["confirmed"]),
                       approved=int(r["approved"] or 0), example_id=r["example_id"]) for r in rows]
