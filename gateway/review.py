"""Review of what clients teach: a dba or admin approves or rejects proposed examples.

Shared by the ``/v1/examples`` routes and ``nl2sql-gateway examples``. The store keeps the rule of which
moves are allowed (:func:`gateway.store.examples.review`); this module turns "not allowed" into the problem
that says why: ``unknown_example`` (no such id, or an example of a database the key may not use: a key
learns nothing about databases outside its reach) or ``example_already_reviewed``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from gateway import errors
from gateway.observability.logging import get_logger
from gateway.store import Store, examples
from gateway.store.examples import ExampleStatus, StoredExample

log = get_logger(__name__)

Decision = Literal["approved", "rejected"]
MayUse = Callable[[str], bool]


async def listing(store: Store, status: ExampleStatus | None, database: str | None, may_use: MayUse,
                  limit: int = 100) -> list[StoredExample]:
    """Examples in ``status`` (all when None), oldest first, of the databases the caller may use."""
    found = await examples.list_by_status(store.pool, status, database, limit=limit)
    return [e for e in found if may_use(e.database)]


async def with_context(store: Store, found: list[StoredExample]) -> list[dict[str, Any]]:
    """Each example as a dict, with the analyst's verdict and note and the original answer's SQL, status and
    row count beside it (see :func:`gateway.store.examples.review_context`; null where there is none)."""
    context = await examples.review_context(store.pool, [e.id for e in found]) if found else {}
    empty = {"verdict": None, "note": None, "original_sql": None, "original_status": None, "original_row_count": None}
    return [{**e.as_dict(), **context.get(e.id, empty)} for e in found]


async def decide(store: Store, example_id: int, decision: Decision, *, reviewer: str, note: str | None,
                 may_use: MayUse) -> StoredExample:
    """Approve or reject one example; returns it as stored after the decision."""
    current = await examples.get(store.pool, example_id)
    if current is None or not may_use(current.database):
        raise errors.UnknownExample(f"there is no example {example_id}", example_id=example_id)
    async with store.transaction() as conn:
        decided = await examples.review(conn, example_id, decision, reviewer=reviewer, note=note)
    if decided is None:
        now = await examples.get(store.pool, example_id)
        status = now.status if now else current.status
        raise errors.ExampleAlreadyReviewed(
            f"example {example_id} is {status}; it cannot be {decision}"
            + (" (a rejected example stays rejected)" if status == "rejected" else ""),
            example_id=example_id, example_status=status,
        )
    log.info("example_reviewed", example_id=example_id, decision=decision, reviewer=reviewer,
             database=decided.database)
    return decided
