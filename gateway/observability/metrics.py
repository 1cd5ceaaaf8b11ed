"""Every Prometheus metric the gateway exports, prefixed ``nl2sql_``.

Requests and SQL
- ``nl2sql_requests_total{endpoint,status}``: HTTP requests by route template and status code.
- ``nl2sql_request_seconds{endpoint}``: HTTP request latency.
- ``nl2sql_db_seconds{database}``: time spent in the database per query (acquire excluded).
- ``nl2sql_db_errors_total{database,code}``: queries that failed, by problem code.
- ``nl2sql_problems_total{code}``: problem responses (``application/problem+json``) by problem code, whatever
  the route (the console's Status page shows them).
- ``nl2sql_safety_blocks_total{code}``: statements refused by the safety check, by finding code.
- ``nl2sql_pool_size{database}`` / ``nl2sql_pool_in_use{database}``: connections open / checked out.
- ``nl2sql_pool_max{database}``: the pool's configured maximum (``pool_max_size``); in use / max near 1
  means the pool is exhausted and requests wait for a connection.

Questions (``POST /v1/ask``)
- ``nl2sql_ask_total{database,status}``: questions answered, by final status.
- ``nl2sql_attempts_per_request``: attempts (generation + reflections) per question.
- ``nl2sql_reflections_total{database,trigger}``: reflections, by the finding code that triggered them.
- ``nl2sql_first_pass_total{database}`` / ``nl2sql_final_pass_total{database}``: questions whose first /
  final attempt passed validation; divide by ``nl2sql_ask_total`` for the first-pass and final pass ratios.
- ``nl2sql_first_pass_ratio{database}`` / ``nl2sql_final_pass_ratio{database}``: the same ratios, kept as
  gauges since the process started, for dashboards without PromQL arithmetic.
- ``nl2sql_candidate_selections_total{database,selection}``: questions answered with several candidates
  (``ask.candidates`` > 1), by how the answer was chosen: ``unanimous`` (every candidate agreed),
  ``largest_group`` (one group of agreeing candidates larger than the others), ``tie_first`` /
  ``tie_selector`` (equally large groups, the tie broken by the lowest-numbered candidate / by the LLM),
  ``none_passed`` (reflection takes over), ``none_ran``.
- ``nl2sql_candidates_agreement{database}``: share of the n candidates in the chosen group (0 when none
  passed); near 1 the candidates agree, low values mean the model is unsure of these questions.
- ``nl2sql_llm_calls_total{purpose,outcome}``, ``nl2sql_llm_seconds{purpose}``,
  ``nl2sql_llm_tokens_total{purpose,kind}``: LLM calls, latency and tokens by purpose
  (generate, reflect, judge, select, magic_feedback, magic_correction, magic_manager, magic_guideline, magic_gate).
- ``nl2sql_llm_breaker_open``: 1 while the LLM circuit breaker is open (calls refused without trying).

Backpressure
- ``nl2sql_in_flight``: requests being served now (health and metrics excluded).
- ``nl2sql_rejected_total{reason}``: requests shed by backpressure: ``rate_limited``, ``unauthenticated``
  (429), ``in_flight`` and ``llm_queue`` (503 overloaded).

Rules and privileges
- ``nl2sql_rules_reload_errors_total{database,reason}``: rule reloads that kept the last good rules (reason
  ``invalid``, ``empty``, ``unstable``: the files kept changing while read) or kept names hidden that
  disappeared from the files (``hidden_removed``); see docs/hidden-data.md.
- ``nl2sql_role_privilege_problems{database,role,problem}``: what the login role or a key's mapped role may
  do beyond reading visible columns (``reads_hidden``, ``can_write``, ``can_create``, ``superuser``,
  ``bypassrls``, ``missing_role``); the value counts the objects (1 for role attributes), 0 once fixed.

Feedback store and MAGIC
- ``nl2sql_feedback_total{database,verdict}``: feedback received (``correct`` / ``incorrect``), new rows only.
- ``nl2sql_feedback_accuracy_ratio{database}``: share of ``correct`` verdicts among all feedback in the store.
- ``nl2sql_corrections_pending``: corrections MAGIC has not processed yet (refreshed at start-up, by each
  run and activation, and by the scheduler every ``magic.poll_s``).
- ``nl2sql_regeneration_runs_total{outcome}``: regeneration runs by outcome (activated, candidate, pending_review,
  rejected, no_change, locked, failed).
- ``nl2sql_guideline_active_version``: the active stored guideline version (0 when none is active).

With several worker processes (``serve --workers N``) every worker writes its values to files in
``PROMETHEUS_MULTIPROC_DIR`` and ``/metrics`` sums counters and histograms over all of them. Gauges say how
they combine (``multiprocess_mode``): per-process quantities (pools, requests in flight) are summed over the
live workers, the breaker reports 1 when any worker's is open, and values every worker reads from the same
place (store, rules) or keeps since it started (the pass ratios: exact ratios come from the counters) show
the most recently set value.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, multiprocess
from prometheus_client import generate_latest as _generate_latest

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
if os.environ.get(MULTIPROC_ENV):  # the values below are files in it from the moment they are declared
    os.makedirs(os.environ[MULTIPROC_ENV], exist_ok=True)

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

REQUESTS = Counter("nl2sql_requests_total", "HTTP requests by endpoint and status.", ["endpoint", "status"])
REQUEST_SECONDS = Histogram(
    "nl2sql_request_seconds", "HTTP request latency in seconds.", ["endpoint"], buckets=LATENCY_BUCKETS
)
DB_SECONDS = Histogram(
    "nl2sql_db_seconds", "Time spent executing queries in the database.", ["database"], buckets=LATENCY_BUCKETS
)
PROBLEMS = Counter("nl2sql_problems_total", "Problem responses by problem code.", ["code"])
DB_ERRORS = Counter("nl2sql_db_errors_total", "Queries that failed, by problem code.", ["database", "code"])
SAFETY_BLOCKS = Counter("nl2sql_safety_blocks_total", "Statements refused by the safety check.", ["code"])
POOL_SIZE = Gauge("nl2sql_pool_size", "Connections open in the pool.", ["database"], multiprocess_mode="livesum")
POOL_IN_USE = Gauge("nl2sql_pool_in_use", "Connections checked out of the pool.", ["database"],
                    multiprocess_mode="livesum")
POOL_MAX = Gauge("nl2sql_pool_max", "Most connections the pool may open (pool_max_size).", ["database"],
                 multiprocess_mode="livesum")

RULES_RELOAD_ERRORS = Counter("nl2sql_rules_reload_errors_total",
                              "Rule reloads that kept the last good rules, by reason.", ["database", "reason"])

ROLE_PRIVILEGE_PROBLEMS = Gauge("nl2sql_role_privilege_problems",
                                "What a role may do beyond the rules (objects), by problem.",
                                ["database", "role", "problem"], multiprocess_mode="mostrecent")

ASK = Counter("nl2sql_ask_total", "Questions answered, by final status.", ["database", "status"])
ATTEMPTS = Histogram(
    "nl2sql_attempts_per_request", "Attempts (generation and reflections) per question.", buckets=(1, 2, 3, 4, 5, 6, 8)
)
REFLECTIONS = Counter("nl2sql_reflections_total", "Reflections by triggering finding.", ["database", "trigger"])
FIRST_PASS = Counter("nl2sql_first_pass_total", "Questions whose first attempt passed.", ["database"])
FINAL_PASS = Counter("nl2sql_final_pass_total", "Questions whose final attempt passed.", ["database"])
FIRST_PASS_RATIO = Gauge("nl2sql_first_pass_ratio", "Share of questions passing on the first attempt.", ["database"],
                         multiprocess_mode="mostrecent")
FINAL_PASS_RATIO = Gauge("nl2sql_final_pass_ratio", "Share of questions passing after reflection.", ["database"],
                         multiprocess_mode="mostrecent")
CANDIDATE_SELECTIONS = Counter(
    "nl2sql_candidate_selections_total", "Questions answered with several candidates, by how one was chosen.",
    ["database", "selection"],
)
CANDIDATE_AGREEMENT = Histogram(
    "nl2sql_candidates_agreement", "Share of the candidates in the chosen group of agreeing candidates.",
    ["database"], buckets=(0.0, 0.2, 0.34, 0.5, 0.67, 0.8, 0.99, 1.0),
)
LLM_CALLS = Counter("nl2sql_llm_calls_total", "LLM calls by purpose and outcome.", ["purpose", "outcome"])
LLM_SECONDS = Histogram("nl2sql_llm_seconds", "LLM call latency.", ["purpose"], buckets=LATENCY_BUCKETS)
LLM_TOKENS = Counter("nl2sql_llm_tokens_total", "LLM tokens by purpose and kind.", ["purpose", "kind"])
LLM_BREAKER_OPEN = Gauge("nl2sql_llm_breaker_open", "1 while the LLM circuit breaker is open.",
                         multiprocess_mode="livemax")
SCHEMA_STALE = Counter("nl2sql_schema_stale_total", "Questions answered from a stale schema snapshot because its "
                       "refresh failed or did not finish in time, by reason.", ["database", "reason"])

IN_FLIGHT = Gauge("nl2sql_in_flight", "Requests being served now (health and metrics excluded).",
                  multiprocess_mode="livesum")
REJECTED = Counter("nl2sql_rejected_total", "Requests shed by backpressure, by reason.", ["reason"])
REPLICA_LAG = Gauge("nl2sql_replica_lag_seconds", "How far a read replica's replay is behind (-1: it did not "
                    "answer); above replica_max_lag_s it is skipped.", ["database", "replica"],
                    multiprocess_mode="livemax")
REPLICA_QUERIES = Counter("nl2sql_replica_queries_total", "Client queries by where they ran (primary, "
                          "replica<n>) and outcome (ok, retried: a fault or a recovery conflict on a replica sent "
                          "the query to the primary).", ["database", "source", "outcome"])
STORE_CHANGE_VERSION = Gauge("nl2sql_store_change_version", "The store's change version (keys, guidelines, "
                             "examples) this process serves; a replica behind the others lags.", ["kind"],
                             multiprocess_mode="livemin")
SHARED_LIMITS_DEGRADED = Gauge("nl2sql_shared_limits_degraded", "1 while shared rate limits cannot reach the "
                               "store and run on the fallback (backpressure.shared_fail_open).",
                               multiprocess_mode="livemax")
SHARED_LIMIT_LEASES = Counter("nl2sql_shared_limit_leases_total", "Token leases asked of the store by shared "
                              "rate limits, by outcome (granted, empty, failed).", ["outcome"])

FEEDBACK = Counter("nl2sql_feedback_total", "Feedback received, by verdict.", ["database", "verdict"])
FEEDBACK_ACCURACY = Gauge("nl2sql_feedback_accuracy_ratio", "Share of correct verdicts in feedback.", ["database"],
                          multiprocess_mode="mostrecent")
CORRECTIONS_PENDING = Gauge("nl2sql_corrections_pending", "Corrections MAGIC has not processed yet.",
                            multiprocess_mode="mostrecent")
REGENERATION_RUNS = Counter("nl2sql_regeneration_runs_total", "Guideline regeneration runs by outcome.", ["outcome"])
GUIDELINE_ACTIVE_VERSION = Gauge("nl2sql_guideline_active_version", "Active stored guideline version (0: none).",
                                 multiprocess_mode="mostrecent")


def multiprocess_dir() -> str | None:
    """The directory worker processes share their values through, or None in a single process."""
    return os.environ.get(MULTIPROC_ENV) or None


def exposition() -> tuple[bytes, str]:
    """The text ``/metrics`` serves and its content type: this process's registry, or every worker's values."""
    if multiprocess_dir() is None:
        return _generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return _generate_latest(registry), CONTENT_TYPE_LATEST


def process_dead(pid: int | None) -> None:
    """Drop a stopped worker's live gauges (its counters and histograms keep counting in the totals)."""
    if pid is not None and multiprocess_dir() is not None:
        multiprocess.mark_process_dead(pid)


def observe_pools(targets: Iterable[Any]) -> None:
    """Set the pool gauges from each target's pool (``gateway.execute.Target``)."""
    for target in targets:
        size, in_use = target.pool_stats()
        POOL_SIZE.labels(target.name).set(size)
        POOL_IN_USE.labels(target.name).set(in_use)
        POOL_MAX.labels(target.name).set(target.settings.pool_max_size)


async def refresh_pools(targets: Iterable[Any], every_s: float = 1.0) -> None:
    """With several workers a scrape reaches one of them: the others keep their pool gauges fresh."""
    while True:
        observe_pools(targets)
        await asyncio.sleep(every_s)
