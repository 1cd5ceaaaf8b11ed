"""The verified set: question/SQL pairs a DBA stands behind, which every change is replayed against.

Each kind of pair comes from a :class:`VerifiedSource`; :func:`load_verified` asks every source it is given
and merges their items (one per database and question, the first source winning). Approved verified
examples are the source today (:class:`ApprovedExamples`); trusted templates become one more source with
the same two methods, without touching the replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.store import examples
from gateway.store.examples import question_key
from gateway.store.pool import Db

__all__ = ["ApprovedExamples", "VerifiedItem", "VerifiedSource", "load_verified"]


@dataclass(frozen=True, slots=True)
class VerifiedItem:
    """One verified question with its reference SQL; ``key`` names it in reports (``example:12``)."""

    source: str
    id: str
    database: str
    question: str
    sql: str

    @property
    def key(self) -> str:
        return f"{self.source}:{self.id}"

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "source": self.source, "id": self.id, "database": self.database,
                "question": self.question, "sql": self.sql}


class VerifiedSource(Protocol):
    name: str

    async def items(self, db: Db, databases: Sequence[str], limit: int, *,
                    learnt_from: Sequence[int] = ()) -> list[VerifiedItem]:
        """At most ``limit`` items of ``databases``, most recent first, none taught by the corrections
        ``learnt_from`` (a change built from them would be graded on the answers it was written from)."""
        ...


class ApprovedExamples:
    """Verified examples a DBA approved (or added), most recent first."""

    name = "example"

    async def items(self, db: Db, databases: Sequence[str], limit: int, *,
                    learnt_from: Sequence[int] = ()) -> list[VerifiedItem]:
        found = await examples.held_out(db, list(databases), learnt_from=list(learnt_from), limit=limit)
        return [VerifiedItem(self.name, str(e.id), e.database, e.question, e.sql) for e in found]


DEFAULT_SOURCES: tuple[VerifiedSource, ...] = (ApprovedExamples(),)


async def load_verified(db: Db, databases: Sequence[str], *, limit: int, learnt_from: Sequence[int] = (),
                        sources: Sequence[VerifiedSource] = DEFAULT_SOURCES) -> list[VerifiedItem]:
    """The verified set of ``databases``: every source's items, one per (database, question), at most ``limit``,
    none taught by the corrections ``learnt_from``."""
    seen: set[tuple[str, str]] = set()
    out: list[VerifiedItem] = []
    for source in sources:
        for item in await source.items(db, databases, limit, learnt_from=learnt_from):
            key = (item.database, question_key(item.question))
            if key not in seen and len(out) < limit:
                seen.add(key)
                out.append(item)
    return out
