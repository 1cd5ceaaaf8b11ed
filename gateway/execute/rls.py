"""Row policies as the catalogs tell them: which tables inherit from which, and whether Postgres's row-level
security would apply to a role on the tables that carry a gateway row filter.

``rules check`` reports a table whose ``row_filter`` has no RLS behind it (the gateway's rewrite is then
the only layer), and a role that RLS would not restrain anyway: the table's owner (or a member of the
owning role) without ``FORCE ROW LEVEL SECURITY``, a superuser, or a role with ``BYPASSRLS``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from gateway.execute import faults
from gateway.execute.pool import Target

# One row per rule key asked for ('orders' or 'sales.orders', lower case, as the rules spell them): an
# unqualified key is the table of that name visible on the search_path, matched without regard to case
# (an exact spelling first), like the rewrite resolves it.
_RLS_SQL = """
SELECT wanted.name, c.oid IS NOT NULL AS found,
       coalesce(c.relrowsecurity, false) AS enabled, coalesce(c.relforcerowsecurity, false) AS forced,
       coalesce(pg_has_role(coalesce($2::name, current_user), c.relowner, 'USAGE'), false) AS owns,
       r.rolsuper AS superuser, r.rolbypassrls AS bypass
FROM unnest($1::text[]) AS wanted(name)
LEFT JOIN LATERAL (
    SELECT c.oid, c.relrowsecurity, c.relforcerowsecurity, c.relowner
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p')
      AND CASE WHEN strpos(wanted.name, '.') > 0
               THEN lower(n.nspname) || '.' || lower(c.relname) = wanted.name
               ELSE lower(c.relname) = wanted.name AND pg_table_is_visible(c.oid) END
    ORDER BY c.relname = wanted.name DESC
    LIMIT 1
) c ON true
CROSS JOIN pg_roles r
WHERE r.rolname = coalesce($2::name, current_user)
"""


@dataclass(frozen=True, slots=True)
class TableRls:
    """What RLS does for ``role`` on one table named in a row filter."""

    table: str
    found: bool
    enabled: bool  # ALTER TABLE ... ENABLE ROW LEVEL SECURITY
    forced: bool  # ... FORCE ROW LEVEL SECURITY: the owner is filtered too
    owns: bool  # the role owns the table or is a member of its owner
    superuser: bool
    bypass: bool  # BYPASSRLS

    @property
    def applies(self) -> bool:
        """True when Postgres filters this role's reads of the table by its policies."""
        return (self.enabled and not self.superuser and not self.bypass
                and (self.forced or not self.owns))


async def table_rls(target: Target, tables: list[str], role: str | None = None) -> list[TableRls]:
    """RLS facts for each of ``tables`` (``name`` or ``schema.name``) as ``role`` (None: the login role)."""
    if not tables:
        return []
    try:
        async with asyncio.timeout(target.client_timeout_s()), \
                target.pool.acquire(timeout=target.settings.limits.acquire_timeout_s) as conn:
            async with conn.transaction(readonly=True):
                rows = await conn.fetch(_RLS_SQL, tables, role)
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.database_error(target.name, exc, fault) from exc
    return [TableRls(r["name"], r["found"], r["enabled"], r["forced"], r["owns"], bool(r["superuser"]),
                     bool(r["bypass"])) for r in rows]


# Every ancestor of every table that inherits (partitions too): (schema, name) -> (schema, name) of each.
_ANCESTORS_SQL = """
WITH RECURSIVE up(child, parent) AS (
    SELECT inhrelid, inhparent FROM pg_inherits
    UNION
    SELECT up.child, i.inhparent FROM up JOIN pg_inherits i ON i.inhrelid = up.parent
)
SELECT cn.nspname AS schema, c.relname AS name, pn.nspname AS parent_schema, p.relname AS parent_name
FROM up
JOIN pg_class c ON c.oid = up.child JOIN pg_namespace cn ON cn.oid = c.relnamespace
JOIN pg_class p ON p.oid = up.parent JOIN pg_namespace pn ON pn.oid = p.relnamespace
"""


async def table_ancestors(target: Target) -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """``(schema, table) -> ((schema, ancestor), ...)`` for every table that inherits from another."""
    try:
        async with asyncio.timeout(target.client_timeout_s()), \
                target.pool.acquire(timeout=target.settings.limits.acquire_timeout_s) as conn:
            rows = await conn.fetch(_ANCESTORS_SQL)
    except faults.FAULTS as exc:
        fault = faults.classify(exc)
        if fault is None:
            raise
        raise faults.database_error(target.name, exc, fault) from exc
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for r in rows:
        found.setdefault((r["schema"], r["name"]), []).append((r["parent_schema"], r["parent_name"]))
    return {key: tuple(sorted(set(value))) for key, value in found.items()}
