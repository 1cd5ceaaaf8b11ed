"""Answer history from the request audit: a caller's own recent questions, and one answer by its request id
(the console's history and permalinks).

Who may see an audited answer is decided here, once, for every adapter:

- its owner (the end user who asked, else the API key; :mod:`gateway.ownership`), while the principal may
  still use its database;
- a dba or admin that may use its database and carries no row-policy values (they review what clients
  asked: the audit holds the question and SQL, never rows; under a row policy a reviewer would read
  questions and SQL literals of other tenants, so they see only their own).

Anyone else gets ``unknown_request``, exactly as for an id that was never audited, so nobody learns
whether another owner's request id exists.
"""

from __future__ import annotations

from typing import Any

from gateway import errors
from gateway.auth import ALL_DATABASES, Principal, Role
from gateway.feedback import store_of
from gateway.ownership import owner_of
from gateway.state import GatewayState
from gateway.store import audit
from gateway.store.pool import store_faults

HISTORY_MAX = 200


def may_see(principal: Principal, entry: audit.AuditEntry) -> bool:
    """Whether ``principal`` may see the audited answer ``entry`` (see the module docstring)."""
    if not principal.may_use(entry.database):
        return False
    if entry.owner is not None and entry.owner == owner_of(principal).id:
        return True
    return principal.role.allows(Role.DBA) and not principal.claims


async def recent(state: GatewayState, principal: Principal, limit: int) -> list[dict[str, Any]]:
    """The principal's own latest answers, newest first (at most ``limit``, capped at HISTORY_MAX), in the
    databases it may still use."""
    store = store_of(state.store)
    databases = None if ALL_DATABASES in principal.databases else sorted(principal.databases)
    with store_faults("the history could not be read"):
        found = await audit.owned_recent(store.pool, owner_of(principal).id, min(limit, HISTORY_MAX), databases)
    return [a.as_dict() for a in found if principal.may_use(a.entry.database)]


async def one(state: GatewayState, principal: Principal, request_id: str) -> dict[str, Any]:
    """The audited answer under ``request_id`` when the principal may see it; ``unknown_request`` otherwise."""
    store = store_of(state.store)
    with store_faults("the answer could not be read"):
        found = await audit.get_dated(store.pool, request_id)
    if found is None or not may_see(principal, found.entry):
        raise errors.UnknownRequest(f"no answer {request_id!r} that this caller may see")
    out = found.as_dict()
    out["yours"] = found.entry.owner == owner_of(principal).id
    return out
