"""``SchemaSnapshot``: what the context stage knows about one database, as the cache (gateway.context.cache)
publishes it and a caller's view (gateway.context.scope) cuts it.

A module of its own so that the cache, which builds callers' views, and the scope, which builds them from a
snapshot, both import it and neither imports the other back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.execute.introspect import Schema


@dataclass(slots=True)
class SchemaSnapshot:
    """What the context stage knows about one database at ``loaded_at`` (monotonic seconds)."""

    schema: Schema
    # (table.qualified_name, column) -> every distinct value, most frequent first (low-cardinality only)
    values: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    trgm_schema: str | None = None
    loaded_at: float = 0.0
    # build_context's question-independent work (visible schema, rendered tables), memoized per snapshot
    prepared: Any = field(default=None, compare=False, repr=False)
    # The text columns sampling tried, as (schema, table, qualified name, column): a caller's view reads the
    # ones of row-secured tables again as that caller.
    candidates: tuple[tuple[str, str, str, str], ...] = ()
    # A caller's view (gateway.context.scope) only: the snapshot's whole schema (names the caller may not
    # read are redacted from every text), the snapshot it was cut from, and the tables whose rows depend on
    # the reader (verified examples that read them are not shown to the caller).
    full: Schema | None = field(default=None, repr=False)
    base: SchemaSnapshot | None = field(default=None, compare=False, repr=False)
    row_secured: frozenset[str] = frozenset()
    # The catalog version read before introspection, and when it was last compared (monotonic seconds).
    version: str | None = None
    checked_at: float = 0.0
    # Published after introspection of a database read for the first time, before its sample values: its
    # questions are answered from names, comments and keys meanwhile, without value hints.
    partial: bool = False
    # Built for one question from the tables its words match (gateway.execute.candidates), while the first
    # read is running: never cached, never shared.
    probe: bool = False
