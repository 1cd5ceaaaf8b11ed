"""System catalogs: allowed only from a short list (see ``gateway.safety.catalogs``), deny by default."""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.catalogs import SCHEMA, allowed, catalog_name
from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy


def catalogs(ctx: Context, policy: Policy) -> Iterator[Finding]:
    extra = frozenset(c.casefold() for c in policy.allowed_catalogs)
    hides = bool(policy.hidden_tables or policy.hidden_columns)
    for rel, _ in ctx.tree.relations:
        key = catalog_name(rel.get("schemaname"), rel.get("relname", ""))
        if key is None or allowed(key, extra, hides):
            continue
        why = "it lists table and column names, and the policy hides some" if key in SCHEMA else \
            "it is not on the allowlist of catalogs that describe the schema without exposing data or " \
            "other sessions"
        yield Finding("catalog_not_allowed", f"Catalog {key} is refused: {why} (a DBA can add it to the "
                      "database's allowed_catalogs).", key, ctx.position(rel.get("location")))
