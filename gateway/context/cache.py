"""Introspected schema plus sample values per database, cached and refreshed after a TTL.

One refresh at a time per database (concurrent questions wait for it instead of each introspecting); when a
refresh fails and an older snapshot exists, the older one keeps serving and the failure is logged.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from gateway.execute import Target
from gateway.execute import samples as sample_queries
from gateway.execute.introspect import Schema, TableInfo, introspect
from gateway.observability.logging import get_logger
from gateway.rules.model import RuleSet
from gateway.settings import ContextSettings

log = get_logger(__name__)

TEXT_TYPES = ("text", "character varying", "character", "citext", "name", "varchar", "char")
# Without planner statistics, only tables this small are sampled (one GROUP BY per text column).
UNANALYZED_SAMPLE_MAX_ROWS = 200_000
SAMPLE_CONCURRENCY = 4


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


def is_text_type(type_name: str) -> bool:
    base = type_name.split("(", 1)[0].strip().lower()
    return base in TEXT_TYPES


class SchemaCache:
    def __init__(self, settings: ContextSettings) -> None:
        self.settings = settings
        self._snapshots: dict[str, SchemaSnapshot] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def invalidate(self, database: str | None = None) -> None:
        if database is None:
            self._snapshots.clear()
        else:
            self._snapshots.pop(database, None)

    async def get(self, target: Target, rules: RuleSet) -> SchemaSnapshot:
        """A snapshot no older than ``schema_ttl_s`` (or the last good one when a refresh fails)."""
        current = self._snapshots.get(target.name)
        if current is not None and not self._stale(current):
            return current
        lock = self._locks.setdefault(target.name, asyncio.Lock())
        async with lock:
            current = self._snapshots.get(target.name)
            if current is not None and not self._stale(current):
                return current  # another question refreshed it while we waited
            try:
                fresh = await self._load(target, rules)
            except Exception as exc:
                if current is None:
                    raise
                log.warning("schema_refresh_failed", database=target.name, error=f"{type(exc).__name__}: {exc}")
                current.loaded_at = time.monotonic()  # retry after another TTL, not on every question
                return current
            self._snapshots[target.name] = fresh
            return fresh

    def _stale(self, snapshot: SchemaSnapshot) -> bool:
        return time.monotonic() - snapshot.loaded_at >= self.settings.schema_ttl_s

    async def _load(self, target: Target, rules: RuleSet) -> SchemaSnapshot:
        started = time.perf_counter()
        schema = await introspect(target)
        stats = await sample_queries.column_n_distinct(target)
        trgm = await sample_queries.trigram_schema(target)
        limit = self.settings.low_cardinality_max
        wanted = [(t, c.name) for t in schema.tables for c in t.columns
                  if is_text_type(c.type) and not rules.is_hidden_column(t.qualified_name, c.name)
                  and _maybe_low_cardinality(t, c.name, stats, limit)]
        gate = asyncio.Semaphore(SAMPLE_CONCURRENCY)

        async def fetch(table: TableInfo, column: str) -> tuple[tuple[str, str], list[str] | None]:
            async with gate:
                found = await sample_queries.distinct_values(target, table.schema, table.name, column, limit)
            return (table.qualified_name, column), found

        results = await asyncio.gather(*(fetch(t, c) for t, c in wanted))
        values = {key: found for key, found in results if found}
        log.info("schema_loaded", database=target.name, tables=len(schema.tables), sampled_columns=len(values),
                 pg_trgm=trgm is not None, seconds=round(time.perf_counter() - started, 3))
        return SchemaSnapshot(schema, values, trgm, time.monotonic())


def _maybe_low_cardinality(table: TableInfo, column: str, stats: dict[tuple[str, str, str], float],
                           limit: int) -> bool:
    n_distinct = stats.get((table.schema, table.name, column))
    if n_distinct is None:
        return table.estimated_rows <= UNANALYZED_SAMPLE_MAX_ROWS
    distinct = n_distinct if n_distinct > 0 else -n_distinct * max(table.estimated_rows, 1)
    return distinct <= limit
