"""What every rule receives: the checked text, Postgres's indexed tree and sqlglot's reading of it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from gateway.safety.statement import Statement, char_offset
from gateway.safety.tree import Tree


@dataclass(frozen=True, slots=True)
class Context:
    sql: str
    statement: Statement
    tree: Tree
    expression: exp.Expr | None  # sqlglot's reading of the query; None when sqlglot could not read it

    def position(self, byte_offset: object) -> int | None:
        """A character offset into ``sql`` for a libpg_query location (a byte offset), if there is one."""
        return char_offset(self.sql, byte_offset) if isinstance(byte_offset, int) else None
