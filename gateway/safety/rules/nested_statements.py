"""Writes and locks that hide inside a query: SELECT INTO, FOR UPDATE/SHARE, data-modifying CTEs."""

from __future__ import annotations

from collections.abc import Iterator

from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import unwrap

_STRENGTH = {
    "LCS_FORUPDATE": "FOR UPDATE",
    "LCS_FORNOKEYUPDATE": "FOR NO KEY UPDATE",
    "LCS_FORSHARE": "FOR SHARE",
    "LCS_FORKEYSHARE": "FOR KEY SHARE",
}


def nested_statements(ctx: Context, policy: Policy) -> Iterator[Finding]:
    for select in ctx.tree.selects:
        body = select.body
        if "intoClause" in body:
            rel = body["intoClause"].get("rel", {})
            yield Finding("select_into", f"SELECT INTO {rel.get('relname', '')} creates a table.",
                          "INTO", ctx.position(rel.get("location")))
        for lock in body.get("lockingClause", ()):
            _, clause = unwrap(lock)
            name = _STRENGTH.get(clause.get("strength", ""), "FOR UPDATE")
            yield Finding("locking_clause", f"{name} takes row locks; queries may not lock rows.", name)
    for cte, _ in ctx.tree.ctes:
        kind, _body = unwrap(cte.get("ctequery"))
        if kind != "SelectStmt":
            verb = kind.removesuffix("Stmt").upper() or "a statement"
            yield Finding("data_modifying_cte", f"WITH {cte.get('ctename')} AS ({verb} ...) modifies data.",
                          cte.get("ctename"), ctx.position(cte.get("location")))
