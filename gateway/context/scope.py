"""A caller's view of a database's snapshot: only what its Postgres role, grants and row policy let it read.

The shared snapshot (gateway.context.cache) is read with the gateway's own login role. A caller mapped to
a narrower role, or carrying row-policy values (claims), gets a view derived from it:

- the schema cut to the columns the role may SELECT (one catalog query, gateway.execute.readable);
- sample values of tables whose rows do not depend on the reader (no row-level security, not a view or a
  foreign table) taken from the shared snapshot, for the columns the role may read: the same rows come
  back whoever reads them;
- sample values of the other tables read again as the caller, with ``SET LOCAL ROLE`` and its claims set
  (gateway.execute.scope), so that row-level security filters them; a read that fails leaves the column
  without values, never with the unfiltered ones;
- no sample values at all of tables a gateway-side row filter rule applies to, nor, on such a database, of
  views and other relations that are not base tables (:func:`row_filtered`).

Value hints match the question against these values only (pg_trgm's ``similarity`` gets them as parameters
and reads no table), so a value the caller cannot read can neither be shown nor confirmed by a hint.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from gateway.context.snapshot import SchemaSnapshot
from gateway.execute import samples as sample_queries
from gateway.execute.readable import readable, restrict
from gateway.rules.model import RuleSet

if TYPE_CHECKING:
    from gateway.execute import Target
    from gateway.execute.introspect import Schema

SAMPLE_CONCURRENCY = 4
Claims = tuple[tuple[str, str], ...]


def row_filtered(rules: RuleSet, schema: Schema | None = None) -> frozenset[str]:
    """Relations (lower case, as rules name them) whose rows a gateway-side row filter rule narrows per caller.

    Their sample values and value hints are left out for every caller: a filtered read as the caller would
    need the filter bound to its claims, which the context stage does not do. With any row filter, that is
    also every relation of ``schema`` that is not a base table (views, materialized views, foreign tables):
    their rows may come from a filtered table whatever the caller's claims (the rewrite refuses to read
    them for the same reason). Rules without row filters (the ``row_filter`` rule key, where present) give
    an empty set.
    """
    filters = getattr(rules, "row_filters", None) or {}
    names = {str(name).lower() for name in filters}
    if names and schema is not None:
        names |= {t.qualified_name.lower() for t in schema.tables if t.kind != "table"}
    return frozenset(names)


def is_row_filtered(table: str, filtered: frozenset[str]) -> bool:
    name = table.lower()
    return name in filtered or name.rsplit(".", 1)[-1] in filtered


async def scoped_snapshot(target: Target, rules: RuleSet, base: SchemaSnapshot, role: str | None,
                          claims: Claims, limit: int) -> SchemaSnapshot:
    """The view of ``base`` for a caller acting as ``role`` (None: the gateway's role) with ``claims``.

    One catalog query, plus one read per sampled text column of the tables whose rows depend on the reader.
    Raises ``unknown_pg_role`` when the role does not exist.
    """
    allowed = await readable(target, role)
    schema = restrict(base.schema, allowed)
    visible = {t.qualified_name: t for t in schema.tables}
    secured = {t.qualified_name for t in schema.tables if (t.schema, t.name) in allowed.row_security}
    filtered = row_filtered(rules, base.schema)

    def readable_column(table: str, column: str) -> bool:
        info = visible.get(table)
        return info is not None and any(c.name == column for c in info.columns)

    values = {key: found for key, found in base.values.items()
              if readable_column(*key) and key[0] not in secured and not is_row_filtered(key[0], filtered)}
    # A name given twice has no one value a policy could read: nothing is read again (fail closed).
    unique = len({name for name, _ in claims}) == len(claims)
    again = [(schema_name, name, qualified, column) for schema_name, name, qualified, column in base.candidates
             if unique and qualified in secured and readable_column(qualified, column)
             and not is_row_filtered(qualified, filtered)]
    gate = asyncio.Semaphore(SAMPLE_CONCURRENCY)

    async def fetch(schema_name: str, name: str, column: str) -> list[str] | None:
        async with gate:
            return await sample_queries.distinct_values(target, schema_name, name, column, limit, role=role,
                                                        claims=claims)

    found = await asyncio.gather(*(fetch(s, n, c) for s, n, _, c in again))
    values.update({(q, c): got for (_, _, q, c), got in zip(again, found, strict=True) if got})
    return SchemaSnapshot(schema, values, base.trgm_schema, base.loaded_at, full=base.schema, base=base,
                          row_secured=frozenset(secured))
