"""Catalog relations that expose secrets or other sessions' activity (see ``gateway.safety.catalogs``)."""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.catalogs import SENSITIVE
from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy


def catalogs(ctx: Context, policy: Policy) -> Iterator[Finding]:
    allowed = policy.allowed_catalogs
    for rel, _ in ctx.tree.relations:
        name = rel.get("relname", "").lower()
        what = SENSITIVE.get(name)
        if what is None:
            continue
        schema = (rel.get("schemaname") or "").lower()
        if name in allowed or (schema and f"{schema}.{name}" in allowed):
            continue
        yield Finding("catalog_not_allowed", f"{name} exposes {what}; the database's policy does not allow "
                      "it (allowed_catalogs).", name, ctx.position(rel.get("location")))
