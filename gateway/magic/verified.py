"""The verified set: question/SQL pairs a DBA stands behind, which every change is replayed against.

Each kind of pair comes from a :class:`VerifiedSource`; :func:`load_verified` asks every source it is given
and merges their items (one per database and question, the first source winning). Approved verified
examples (:class:`ApprovedExamples`) come first, then trusted templates (:class:`Templates`: each asked in its
first example question with its default values, the reference being its SQL with those values written in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pglast import parser as pg

from gateway.learning.templates import Template
from gateway.store import examples
from gateway.store import templates as templates_store
from gateway.store.examples import question_key
from gateway.store.pool import Db

__all__ = ["ApprovedExamples", "Templates", "VerifiedItem", "VerifiedSource", "inline_values", "load_verified"]


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


def inline_values(sql: str, values: Sequence[str]) -> str:
    """``sql`` with each ``$k`` replaced by ``values[k-1]`` as a string literal, found by Postgres's own scanner
    (a ``$1`` inside a string or comment is not a parameter). An untyped literal is inferred by Postgres as
    the driver's text parameter is, so the reference reads what the template's run binds.

    >>> inline_values("SELECT count(*) FROM t WHERE s = $1 AND note <> '$1'", ["it's"])
    "SELECT count(*) FROM t WHERE s = 'it''s' AND note <> '$1'"
    """
    out, done = [], 0
    for token in pg.scan(sql):  # character offsets, ends inclusive
        if token.name == "PARAM":
            k = int(sql[token.start + 1:token.end + 1])
            out += [sql[done:token.start], "'" + values[k - 1].replace("'", "''") + "'"]
            done = token.end + 1
    return "".join(out + [sql[done:]])


class Templates:
    """Trusted templates with a default for every parameter: the question they answer with their defaults.

    A template whose parameters lack a default has no one question to replay and is left out. Templates are
    answered by their SQL, not the LLM, so a guideline cannot change them; a rules change can (a column now
    hidden refuses the template), and that is what replaying them catches. They teach no correction, so
    ``learnt_from`` leaves none out.
    """

    name = "template"

    async def items(self, db: Db, databases: Sequence[str], limit: int, *,
                    learnt_from: Sequence[int] = ()) -> list[VerifiedItem]:
        out: list[VerifiedItem] = []
        for database in databases:
            for stored in await templates_store.list_all(db, database):
                template = Template.of(stored)
                if any(p.default is None for p in template.parameters):
                    continue
                values = {p.name: p.default or "" for p in template.parameters}
                out.append(VerifiedItem(self.name, template.name, database, template.question(values),
                                        inline_values(template.sql, template.args(values))))
        return out[:limit]


DEFAULT_SOURCES: tuple[VerifiedSource, ...] = (ApprovedExamples(), Templates())


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
