"""Feedback: the audit of answered questions, and what clients say about the answers (``POST /v1/feedback``).

- Every answer is audited in the store before it is sent, so feedback can name it by request id (with the
  answers of concurrent requests in one statement: gateway.store.batch).
- Feedback is accepted only from the owner of the answer (:mod:`gateway.ownership`: the end user, else the
  API key, else the ``X-Client-Id`` with auth off), and so are the correction and the example proposal it
  carries. Anyone else's feedback answers ``unknown_request``, exactly as an id that was never audited, so
  it neither reaches another owner's answer nor tells whether an id exists or which database it is on.
- Feedback is idempotent per (request, owner): the same feedback again returns the stored row; different
  feedback from the same owner is a ``feedback_conflict``.
- ``correct`` proposes the question and its final SQL as an example (and verifies the corrections that
  led to that SQL). ``incorrect`` with a ``corrected_sql`` stores a user correction and proposes the pair,
  but only after that SQL passed the safety check and ran on the database.
- What one client teaches reaches others only after review: a proposed example is used (few-shot, exact
  answers) once a dba or admin approved it (``gateway.store.examples``). Feedback from an authenticated dba
  or admin (an API key or an end user) is that review, so its example is approved and its correction
  counts as reviewed at once; feedback with auth off is a proposal like a client's.
- Everything one feedback writes commits in one transaction before the 2xx is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from gateway import errors, row_policy
from gateway.client_sql import Databases, check_sql, hidden_names
from gateway.execute import run_query
from gateway.masking import mask, mask_fields
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.ownership import Owner
from gateway.store import Store, audit, corrections, examples, feedback
from gateway.store.feedback import StoredFeedback
from gateway.store.pool import store_faults

if TYPE_CHECKING:
    from gateway.pipeline.question import Question

log = get_logger(__name__)

Verdict = Literal["correct", "incorrect"]
AUDIT_TIMEOUT_S = 2.0


def store_of(store: Store | None) -> Store:
    """The feedback store, or ``store_not_configured`` naming the setting when there is none."""
    if store is None:
        raise errors.StoreNotConfigured("set store.dsn: feedback and guidelines live in the store database")
    return store


async def audit_answer(store: Store | None, answer: Any, q: Question) -> None:
    """Record an answer (a :class:`gateway.pipeline.respond.Answer`) to ``q`` in the store, with its owner;
    no-op without a store.

    Best effort: a store outage costs the answer its audit row (feedback on it then answers
    ``unknown_request``), never the answer itself.
    """
    if store is None or not answer.request_id:
        return
    try:
        async with asyncio.timeout(AUDIT_TIMEOUT_S):
            if not await audit.record_batched(store, _audit_entry(answer, q)):
                # A reused id (in-process callers may choose one) keeps its first answer.
                log.warning("audit_request_id_reused", request_id=answer.request_id)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        log.warning("audit_not_recorded", request_id=answer.request_id, error=repr(exc))


def _audit_entry(answer: Any, q: Question) -> audit.AuditEntry:
    data = answer.as_dict()
    attempts = [{k: v for k, v in a.items() if k not in {"rows", "preview"}} for a in data["attempts"]]
    timings: dict[str, float] = {}
    for attempt in data["attempts"]:
        for key, value in (attempt.get("timings") or {}).items():
            if isinstance(value, (int, float)):
                timings[key] = timings.get(key, 0.0) + float(value)
    return audit.AuditEntry(
        request_id=answer.request_id, database=answer.database, question=answer.question, status=answer.status,
        evidence=q.evidence or "", attempts=attempts, final_sql=data["sql"], timings=timings,
        guideline_version=answer.guideline_version, owner=q.client, end_user=q.end_user, via=q.via,
    )


@dataclass(frozen=True, slots=True)
class FeedbackIn:
    """Feedback as ``Gateway.feedback`` hands it over, with who sent it (decided by the Gateway)."""

    request_id: str
    owner: Owner  # only the answer's owner may give feedback on it
    verdict: Verdict
    corrected_sql: str | None = None
    note: str | None = None
    # The caller's access now: may it still use the request's database, and as which Postgres role a
    # corrected SQL runs.
    may_use: Callable[[str], bool] | None = None
    pg_role: str | None = None
    # The caller's row-policy values: a corrected SQL runs filtered exactly as the caller's own SQL does.
    claims: tuple[tuple[str, str], ...] = ()
    # True when an authenticated dba or admin sent it: its pair is approved, its correction reviewed.
    reviewer: bool = False

    @property
    def client_id(self) -> str:
        return self.owner.id


async def _submit(store: Store, databases: Databases, item: FeedbackIn) -> tuple[StoredFeedback, bool]:
    entry = await audit.get_owned(store.pool, item.request_id, item.owner.id)
    # Another owner's answer, or one on a database the caller may no longer use, is not the caller's to
    # judge: the same answer as an id that was never audited, naming no database.
    if entry is None or (item.may_use is not None and not item.may_use(entry.database)):
        raise errors.UnknownRequest(f"no answer of yours has request id {item.request_id!r}",
                                    request_id=item.request_id)
    if item.verdict == "correct" and item.corrected_sql:
        raise errors.InvalidRequest("corrected_sql goes with verdict 'incorrect'", field="corrected_sql")
    existing = await feedback.get(store.pool, item.request_id, item.client_id)
    if existing is not None:
        return _same_or_conflict(existing, item), False
    if item.corrected_sql:
        await _verify_correction(databases, entry.database, item.corrected_sql, item.pg_role, item.claims)

    async with store.transaction() as conn:
        who = item.owner
        stored = await feedback.insert(conn, request_id=item.request_id, client_id=who.id,
                                       verdict=item.verdict, corrected_sql=item.corrected_sql, note=item.note,
                                       correction_id=None, example_id=None, end_user=who.end_user, via=who.via)
        if stored is None:  # the same client raced itself; the other submission won
            raise _Raced
        correction_id = example_id = None
        reviewer = item.client_id if item.reviewer else None
        # A template's answer: its SQL has bind parameters ($1 ...), usable only as the template it already is;
        # the verdict is kept (it counts in the suggestions), no example or correction is made of that SQL.
        templated = any(isinstance(a, dict) and a.get("source") == "template" for a in entry.attempts or [])
        if item.verdict == "correct" and entry.final_sql and not templated:
            await corrections.verify_for_request(conn, entry.request_id, entry.final_sql)
            example_id = await examples.add(conn, database=entry.database, question=entry.question,
                                            sql=entry.final_sql, source="feedback", request_id=entry.request_id,
                                            proposed_by=who.id, approved_by=reviewer, end_user=who.end_user,
                                            via=who.via)
        elif item.corrected_sql:
            if entry.final_sql and not templated:  # without a wrong SQL there is nothing for MAGIC to learn from
                correction_id = await corrections.add(
                    conn, database=entry.database, question=entry.question, evidence=entry.evidence,
                    incorrect_sql=entry.final_sql, corrected_sql=item.corrected_sql, source="user", verified=True,
                    request_id=entry.request_id, reviewed_by=reviewer, owner=who.id, end_user=who.end_user,
                    via=who.via,
                )
            example_id = await examples.add(conn, database=entry.database, question=entry.question,
                                            sql=item.corrected_sql, source="correction", request_id=entry.request_id,
                                            proposed_by=who.id, approved_by=reviewer, end_user=who.end_user,
                                            via=who.via)
        if correction_id or example_id:
            await conn.execute("UPDATE feedback SET correction_id = $2, example_id = $3 WHERE id = $1",
                               stored.id, correction_id, example_id)
            stored.correction_id, stored.example_id = correction_id, example_id
        if example_id is not None:
            found = await examples.get(conn, example_id)
            stored.example_status = found.status if found else None
    metrics.FEEDBACK.labels(entry.database, item.verdict).inc()
    await _refresh_accuracy(store, entry.database)
    log.info("feedback_recorded", request_id=item.request_id, verdict=item.verdict,
             correction_id=stored.correction_id, example_id=stored.example_id)
    return stored, True


class _Raced(Exception):
    pass


async def submit(store: Store, databases: Databases, item: FeedbackIn) -> tuple[StoredFeedback, bool]:
    """Store the feedback; returns it and whether it is new (False: an identical earlier submission).

    ``databases`` checks and runs a ``corrected_sql`` on the answer's database before it is stored.

    Two identical submissions racing each other resolve to the one that committed first.
    """
    # The transaction either committed or did not: a store outage leaves nothing half-written, and a
    # feedback whose commit was cut off is found by the client's retry (feedback is idempotent).
    with store_faults("the feedback was not recorded, send it again later"):
        try:
            return await _submit(store, databases, item)
        except _Raced:
            existing = await feedback.get(store.pool, item.request_id, item.client_id)
            assert existing is not None
            return _same_or_conflict(existing, item), False


def _same_or_conflict(existing: StoredFeedback, item: FeedbackIn) -> StoredFeedback:
    if (existing.verdict, existing.corrected_sql or None, existing.note or None) != (
            item.verdict, item.corrected_sql or None, item.note or None):
        raise errors.FeedbackConflict(
            f"client {item.client_id!r} already gave feedback {existing.verdict!r} on this request; "
            "feedback cannot be changed", feedback_id=existing.id, verdict=existing.verdict,
        )
    return existing


async def _verify_correction(databases: Databases, database: str, sql: str, role: str | None,
                             claims: Sequence[tuple[str, str]] = ()) -> None:
    """The corrected SQL must pass the safety check and run; raises the problem that says why not.

    It runs as the caller's own SQL does (``POST /v1/sql``): its Postgres role, its claims set for RLS and
    bound into the rules' row filters. Run unfiltered, its error messages would read other tenants' rows."""
    verdict = check_sql(databases, sql, database)
    run = None
    if verdict.allowed:
        run = await row_policy.filtered(databases, database, sql, claims, verdict)
        verdict = run.verdict
    if run is None or not verdict.allowed:
        names = hidden_names(databases, database)  # a finding names what it refused: not a hidden name
        raise errors.CorrectionBlocked(
            mask("corrected_sql was refused: " + "; ".join(f.message for f in verdict.findings), names),
            findings=mask_fields([f.as_dict() for f in verdict.findings], names), codes=verdict.codes,
        )
    # Running it proves it executes; one row is enough to prove that and keeps the call cheap.
    await run_query(databases.target(database), run.sql, max_rows=1, role=role, claims=claims, args=run.args)


async def _refresh_accuracy(store: Store, database: str) -> None:
    try:
        correct, total = (await feedback.accuracy_by_database(store.pool)).get(database, (0, 0))
        if total:
            metrics.FEEDBACK_ACCURACY.labels(database).set(correct / total)
    except Exception as exc:  # noqa: BLE001 - a gauge is not worth failing a committed feedback for
        log.info("feedback_accuracy_not_refreshed", error=repr(exc))


def feedback_dict(stored: StoredFeedback) -> dict[str, Any]:
    return {
        "feedback_id": stored.id, "request_id": stored.request_id, "client_id": stored.client_id,
        "verdict": stored.verdict, "correction_id": stored.correction_id, "example_id": stored.example_id,
        "example_status": stored.example_status,
        "created_at": stored.created_at.isoformat(),
    }
