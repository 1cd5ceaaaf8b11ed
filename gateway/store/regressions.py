"""Regression reports: each replay of the verified set, kept per guideline version (see gateway.magic.replay).

A report is written in its own transaction before the activation it judged is answered, so a refusal a DBA
reads is always on record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.store.pool import Db


@dataclass(frozen=True, slots=True)
class StoredReport:
    id: int
    guideline_version: int | None
    database: str | None
    subject: str
    actor: str
    regressed: int
    passed: bool
    report: dict[str, Any]
    created_at: datetime

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "guideline_version": self.guideline_version, "database": self.database,
                "subject": self.subject, "actor": self.actor, "regressed": self.regressed, "passed": self.passed,
                "counts": self.report.get("counts", {}), "created_at": self.created_at.isoformat()}

    def as_dict(self) -> dict[str, Any]:
        return {**self.summary(), "report": self.report}


def _from_row(row: Any) -> StoredReport:
    return StoredReport(row["id"], row["guideline_version"], row["database"], row["subject"], row["actor"],
                        row["regressed"], row["passed"], row["report"], row["created_at"])


async def add(db: Db, *, report: dict[str, Any], subject: str, actor: str, passed: bool,
              guideline_version: int | None = None, database: str | None = None) -> int:
    return int(await db.fetchval(
        "INSERT INTO regression_reports (guideline_version, database, subject, actor, regressed, passed, report) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        guideline_version, database, subject, actor, len(report.get("regressions", [])), passed, report,
    ))


async def get(db: Db, report_id: int) -> StoredReport | None:
    row = await db.fetchrow("SELECT * FROM regression_reports WHERE id = $1", report_id)
    return _from_row(row) if row else None


async def for_version(db: Db, version: int, *, limit: int = 20) -> list[StoredReport]:
    """The version's replays, newest first."""
    rows = await db.fetch("SELECT * FROM regression_reports WHERE guideline_version = $1 ORDER BY id DESC LIMIT $2",
                          version, limit)
    return [_from_row(r) for r in rows]
