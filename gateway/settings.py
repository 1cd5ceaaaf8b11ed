"""One typed settings object for the whole gateway.

Sources, lowest priority first: field defaults, the TOML config file, then environment variables prefixed
``NL2SQL_`` (nested fields use ``__``: ``NL2SQL_DATABASES__DEMO__DSN``, ``NL2SQL_SERVER__PORT``).
The config file is ``NL2SQL_CONFIG`` or ``./nl2sql-gateway.toml`` when it exists; see
``nl2sql-gateway.example.toml`` for a documented example.

Secrets (database passwords, API keys) come from the environment only: a config file that carries a
password, a DSN with a password in it or an API key is refused, so it can be committed and reviewed safely.
The standard ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` variables fill in the LLM endpoint when the
``NL2SQL_LLM__*`` ones are not set.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from gateway import findings
from gateway.config.assets import shipped_dir
from gateway.safety.policy import Policy

DEFAULT_CONFIG_FILE = Path("nl2sql-gateway.toml")
SECRET_KEYS = frozenset({"password", "api_key", "secret", "token"})


class ConfigError(ValueError):
    """The configuration cannot be used; the message says which setting to change."""


class Limits(BaseModel):
    """Execution limits for one target database."""

    model_config = ConfigDict(extra="forbid")

    max_rows: int = Field(default=1000, ge=1, le=1_000_000, description="Most rows returned; more set `truncated`.")
    statement_timeout_ms: int = Field(default=5000, ge=1, description="Postgres statement_timeout per query.")
    lock_timeout_ms: int = Field(default=1000, ge=1, description="Postgres lock_timeout per query.")
    idle_in_transaction_timeout_ms: int = Field(
        default=10_000, ge=1, description="Postgres idle_in_transaction_session_timeout per query."
    )
    max_sql_bytes: int = Field(default=100_000, ge=16, description="Largest SQL text accepted (UTF-8 bytes).")
    max_result_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024,
        description="Largest result held in memory (estimated from the values); more answers result_too_large.",
    )
    acquire_timeout_s: float = Field(
        default=5.0, gt=0, description="Longest wait for a pooled connection before answering 503."
    )
    max_plan_cost: float = Field(
        default=1e8, gt=0, description="Largest planner total cost (EXPLAIN, no ANALYZE) a query may have; "
        "more answers cost_too_high before it runs. Size it from EXPLAIN of the heaviest dashboard query.",
    )
    max_plan_rows: float = Field(
        default=1e8, gt=0, description="Most rows the planner may expect from any node of a query's plan (a "
        "join, a scan, a function); more answers cost_too_high before it runs.",
    )
    work_mem: str | None = Field(
        default="32MB", pattern=r"^[0-9]{1,9}\s*(kB|MB|GB)?$",
        description="Postgres work_mem set locally per query (memory per sort or hash before spilling to "
        "disk); unset keeps the server's value.",
    )


FINDING_CODES_REFLECTED_BY_DEFAULT = frozenset(
    {"empty_result", "empty_aggregate", "count_mismatch", "rule_violation", "llm_judge",
     "metric_definition_mismatch", "default_filter_missing"}
)


class AskPolicy(BaseModel):
    """How ``POST /v1/ask`` works on one database: model, reflection loop and guideline use."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="LLM model for this database; llm.model if unset.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="llm.temperature if unset.")
    max_iterations: int = Field(
        default=3, ge=0, le=10, description="Most reflection rounds after the first generation (0: none)."
    )
    time_budget_s: float = Field(
        default=30.0, gt=0, description="Time budget of one question, all attempts (capped by "
        "server.request_timeout_s); no new reflection starts once it is spent."
    )
    reflect_on: frozenset[str] = Field(
        default=FINDING_CODES_REFLECTED_BY_DEFAULT,
        description="Finding codes that trigger a reflection; exec_error, blocked and no_sql always do. "
        "Other findings leave the answer `suspicious`. Codes come from the registry (gateway/findings.py); one "
        "that cannot trigger a reflection (unknown, a safety code, repeated_sql) is a configuration error.",
    )
    compile_metrics: bool = Field(
        default=True, description="When the database has a semantic model (semantic_dir) and a question names "
        "one of its metrics, ask the LLM for a metric query (structured output) and compile the SQL from the "
        "model's definitions before any SQL generation; a question the model cannot answer goes to generation.")
    guideline_scenario: Literal["errors_only", "suspicious", "all"] = Field(
        default="suspicious",
        description="Which attempts the active guideline is applied to (the MAGIC paper's scenarios): "
        "`errors_only` reflections on failed or blocked SQL, `suspicious` every reflection, `all` every "
        "reflection plus a guideline review of SQL that passed validation.",
    )
    llm_judge: bool = Field(default=False, description="Ask the LLM whether a result answers the question.")
    candidates: int = Field(
        default=1, ge=1, le=16, description="First-pass SQL candidates generated in parallel (1: one generation). "
        "Each is checked and run; the largest group of passing candidates with equal results wins, and "
        "reflection works on the chosen one when none passes."
    )
    candidate_temperature: float = Field(
        default=0.7, ge=0, le=2, description="Sampling temperature of every candidate after the first (the "
        "first keeps `temperature`), so that candidates differ."
    )
    selector: Literal["first", "llm"] = Field(
        default="first", description="How a tie between equally large groups of candidates is broken: `first` "
        "takes the group of the lowest-numbered candidate, `llm` asks the LLM to pick (one more call)."
    )

    clarifications: bool = Field(
        default=True, description="Let the LLM answer an ambiguous question with a clarifying question "
        "(status `needs_clarification`, no SQL run) instead of guessing; false: the prompt does not offer it and "
        "such a reply counts as `no_sql`.",
    )
    conversation_token_budget: int = Field(
        default=1000, ge=0, description="Most tokens (about 4 characters each) of earlier turns (their questions, "
        "SQL and result shapes, never rows) shown with a follow-up question; the latest turns first. 0: none.",
    )

    @field_validator("reflect_on", mode="before")
    @classmethod
    def _registered_codes(cls, value: Any) -> Any:
        # A misspelt code would silently never trigger: refuse it and name what may be listed.
        if not isinstance(value, list | tuple | set | frozenset):
            return value  # not a list of codes: the type check says so
        unknown = sorted({str(code) for code in value} - findings.REFLECTABLE)
        if unknown:
            listable = ", ".join(sorted(findings.REFLECTABLE))
            what = "; ".join(_why_not_reflectable(code) for code in unknown)
            raise ValueError(f"{what}; reflect_on takes: {listable}")
        return value


def _why_not_reflectable(code: str) -> str:
    family = findings.family_of(code)
    if family == "safety":
        return f"{code!r} is a safety code: it arrives inside `blocked`, which always triggers a reflection"
    if family is not None:
        return f"{code!r} cannot trigger a reflection (it ends the loop)"
    guess = difflib.get_close_matches(code, findings.CODES, n=1, cutoff=0.6)
    return f"unknown finding code {code!r}" + (f" (did you mean {guess[0]!r}?)" if guess else "")


class DatabaseSettings(BaseModel):
    """One named target database that clients may query."""

    model_config = ConfigDict(extra="forbid")

    dsn: str = Field(description="libpq-style URL without a password, e.g. postgresql://reader@db:5432/sales.")
    password: SecretStr | None = Field(
        default=None, description="Password for the DSN's user; environment only (NL2SQL_DATABASES__NAME__PASSWORD)."
    )
    description: str = Field(default="", description="What this database holds, shown in GET /v1/databases.")
    pool_min_size: int = Field(default=1, ge=0, description="Connections opened at start-up.")
    pool_max_size: int = Field(default=10, ge=1, description="Most connections open to this database.")
    connect_backoff_s: float = Field(default=0.5, gt=0, description="After a failed connect or login (wrong "
                                     "password, missing role, server down), no new connection is tried for this "
                                     "long, doubled at each further failure; requests meanwhile answer "
                                     "database_unavailable at once.")
    connect_backoff_max_s: float = Field(default=30.0, gt=0, description="The longest connect backoff.")
    replica_dsns: list[str] = Field(default_factory=list, description="Read replicas (streaming standbys) of "
                                    "this database, same user and password as dsn: /v1/sql and /v1/ask queries go "
                                    "to a healthy one in turn, else to dsn; the gateway's own queries (schema, "
                                    "samples, privileges) stay on dsn.")
    replica_max_lag_s: float = Field(default=5.0, gt=0, description="A replica whose replay is further behind "
                                     "than this (nl2sql_replica_lag_seconds) is skipped until it catches up.")
    replica_check_s: float = Field(default=1.0, gt=0, description="How often each replica's health and "
                                   "replication lag are measured.")
    privilege_check: Literal["report", "fail", "off"] = Field(
        default="report", description="What an over-privileged role (reads a hidden column, can write, superuser, "
        "BYPASSRLS) does: report (log, metric, /readyz details), fail (also /readyz 503) or off.")
    rules: Literal["auto", "required", "none"] = Field(
        default="auto", description="Whether this database has DBA rules (rules_dir/NAME.yaml or NAME/*.yaml). "
        "`auto`: the files are read when present; a file that cannot be read as rules (empty, a directory, a "
        "link to nothing, invalid) or a file gone that held rules keeps the last good rules, and with none "
        "saved the database is not served (rules_unavailable). `required`: also not served while it has no "
        "rule file at all (a missing rules folder included). `none`: it has no rules on purpose: a missing or "
        "empty file means no rules and the saved last good set is forgotten.")
    limits: Limits = Field(default_factory=Limits)
    safety: Policy = Field(default_factory=Policy)
    ask: AskPolicy = Field(default_factory=AskPolicy)

    @field_validator("dsn")
    @classmethod
    def _dsn_is_postgres_url(cls, value: str) -> str:
        if urlsplit(value).scheme not in {"postgres", "postgresql"}:
            raise ValueError("dsn must be a postgresql:// URL")
        return value


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", description="Address to listen on.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port to listen on.")
    max_body_bytes: int = Field(default=1_000_000, ge=1024, description="Largest request body accepted.")
    request_timeout_s: float = Field(default=60.0, gt=0, description="Deadline for one request, all stages.")
    operation_timeout_s: float = Field(default=120.0, gt=0, description="Deadline for one command-line "
                                       "operation that reads a database or the store (schema, init, rules check "
                                       "and grants, keys, migrate, guideline and examples commands); eval and "
                                       "guideline regenerate are bounded per question instead.")
    header_timeout_s: float = Field(default=10.0, gt=0, description="Longest a client may take to send a "
                                    "request's line and headers (from connecting, or from the first byte of the "
                                    "next request on a kept-alive connection); then 408 request_timeout and "
                                    "the connection is closed.")
    body_timeout_s: float = Field(default=30.0, gt=0, description="Longest a client may take to send a "
                                  "request's body once its headers arrived; then 408 request_timeout. The "
                                  "body is read before the request takes one of backpressure.max_in_flight.")
    max_header_bytes: int = Field(default=65_536, ge=4096, description="Largest request line plus headers; "
                                  "more answers 431 headers_too_large and closes the connection.")
    drain_timeout_s: float = Field(default=30.0, gt=0, description="On SIGTERM or Ctrl-C, how long requests "
                                   "in flight may take to finish before they are cancelled.")
    workers: int = Field(default=1, ge=1, le=64, description="Worker processes serving the API on one port "
                         "(serve --workers); each has its own pools, caches and rate limits. Metrics are "
                         "aggregated across workers.")


class StoreSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dsn: str | None = Field(default=None, description="The gateway's own database (feedback, guidelines, audit).")
    password: SecretStr | None = Field(default=None, description="Environment only: NL2SQL_STORE__PASSWORD.")
    pool_max_size: int = Field(default=5, ge=1, description="Most connections open to the store.")
    command_timeout_s: float = Field(default=30.0, gt=0, description="Longest a store query may take.")
    migrate_on_start: bool = Field(
        default=True, description="Apply pending store migrations at start-up (`nl2sql-gateway migrate` does "
        "it by hand); replicas starting together take turns through an advisory lock."
    )
    exact_match_answers: bool = Field(
        default=False, description="Answer a question that exactly matches a verified example (same database, "
        "same words ignoring case, spaces and final punctuation) with its verified SQL, without the LLM."
    )
    change_recheck_s: float = Field(
        default=5.0, gt=0, description="Changes other replicas make (key revocation, guideline activation, "
        "example approval) arrive at once through LISTEN/NOTIFY on a connection of its own straight to the store "
        "(not through a transaction pooler); every this many seconds the versions are also re-read, so a lost "
        "notification (or connection) delays a change at most this long."
    )
    conversation_retention_days: float = Field(
        default=30.0, gt=0, description="A conversation (its turns: questions, SQL, result shapes) is kept this "
        "long after its latest turn; older ones answer unknown_conversation and are deleted when a new "
        "conversation starts."
    )


class TemplatesSettings(BaseModel):
    """Trusted answers: DBA templates (gateway.learning.templates) answering the questions that match them."""

    model_config = ConfigDict(extra="forbid")

    answer_questions: bool = Field(
        default=True, description="Answer a question that matches exactly one template (its words, with valid "
        "parameter values in the slots) with that template, without the LLM; the answer is labelled `trusted`.")
    mcp_tools: bool = Field(
        default=False, description="Offer each template as an MCP tool (`template_<name>`, the opt-in "
        "`templates` tool group); the MCP prompts list templates' questions either way.")
    suggest_min_asked: int = Field(
        default=2, ge=1, description="Suggest a question as a template once it was asked this many times and "
        "at least one answer to it was marked correct or approved (`GET /v1/templates/suggestions`).")


class MagicSettings(BaseModel):
    """MAGIC guideline regeneration from the store's corrections (see gateway/magic)."""

    model_config = ConfigDict(extra="forbid")

    schedule: bool = Field(default=True, description="Run regeneration inside the server (one replica at a "
                           "time, elected with a Postgres advisory lock). Needs a store and an LLM.")
    interval_s: float = Field(default=86_400.0, gt=0, description="Regenerate when the last run finished "
                              "longer ago than this and there are pending corrections.")
    min_new_corrections: int = Field(default=20, ge=1, description="Regenerate as soon as this many "
                                     "corrections are pending, whatever the interval.")
    poll_s: float = Field(default=60.0, gt=0, description="How often the scheduler looks at the store.")
    model: str | None = Field(default=None, description="LLM model for the MAGIC agents; llm.model if unset.")
    batch_size: int = Field(default=10, ge=1, description="Successful feedbacks per guideline update (the "
                            "paper's 10).")
    max_iterations: int = Field(default=5, ge=1, le=20, description="Feedback-correction iterations per "
                                "correction before giving up (the paper's 5).")
    concurrency: int = Field(default=2, ge=1, description="Corrections worked on at once in one run.")
    max_corrections_per_run: int = Field(default=200, ge=1, description="Most corrections one run takes.")
    verified_only: bool = Field(default=True, description="Use only verified corrections (user or DBA "
                                "corrections, or reflection fixes a user confirmed).")
    holdout_every: int = Field(default=5, ge=0, description="Every n-th correction (by id) is kept apart "
                               "for the activation gate instead of feeding MAGIC; 0 keeps none apart.")
    auto_activate: bool = Field(default=True, description="Activate a new candidate when it passes the gate "
                                "and no correction behind it is unreviewed (else it waits for a DBA).")
    gate_threshold: float = Field(default=0.0, ge=0, le=1, description="A candidate passes when its "
                                  "held-out accuracy is at least the active version's minus this.")
    gate_min_examples: int = Field(default=1, ge=0, description="Fewest held-out corrections the gate needs; "
                                   "with fewer, candidates wait for a DBA (activate with force).")
    gate_max_examples: int = Field(default=50, ge=1, description="Most held-out corrections (or verified "
                                   "examples) replayed per evaluation (the most recent ones).")
    gate_question_min_examples: int = Field(default=20, ge=1, description="With at least this many held-out "
                                            "approved verified examples in the candidate's scope, the gate "
                                            "replays whole questions (generation and reflection) with each "
                                            "guideline; with fewer, one reflection per held-out correction.")
    replay_regressions: bool = Field(default=True, description="Before a candidate is activated (by a DBA or a "
                                     "run), replay the scope's verified set (approved examples, at most "
                                     "gate_max_examples, none the candidate learnt from) under the guideline "
                                     "in force and under the candidate, and refuse the candidate when a "
                                     "question right before is wrong with it (`guideline_regressed`; force "
                                     "overrides). Reports: GET /v1/guidelines/{version}/regressions.")


class RateLimit(BaseModel):
    """A token bucket: ``rate_per_s`` requests per second sustained, ``burst`` at once."""

    model_config = ConfigDict(extra="forbid")

    rate_per_s: float = Field(ge=0, description="Sustained requests per second (0: unlimited).")
    burst: int = Field(default=20, ge=1, description="Requests allowed at once above the sustained rate.")


class BackpressureSettings(BaseModel):
    """Limits that shed load early (fast 429/503 with Retry-After) instead of queueing without bound.

    Rate limits are kept in memory per process unless ``shared`` is on: then the buckets of API keys and end
    users live in the store and hold across every worker and replica.
    """

    model_config = ConfigDict(extra="forbid")

    max_in_flight: int = Field(default=256, ge=1, description="Requests served at once by one replica "
                               "(health and metrics excluded); more answer 503 overloaded at once.")
    max_in_flight_per_key: int = Field(default=128, ge=0, description="Requests one API key (one end user "
                                       "with OIDC, one client address without a key) may have served at once "
                                       "by one replica; more answer 429 too_many_in_flight at once, so one "
                                       "client cannot take every max_in_flight slot. 0 turns it off.")
    rate_per_s: float = Field(default=0.0, ge=0, description="Requests per second per API key (per client "
                              "address when auth is off), sustained; 0 turns rate limiting off.")
    burst: int = Field(default=20, ge=1, description="Requests per key allowed at once above rate_per_s.")
    roles: dict[str, RateLimit] = Field(default_factory=dict, description="Rate limits per API key role "
                                        "(client, dba, admin), replacing rate_per_s and burst for that role.")
    user_rate_per_s: float = Field(default=0.0, ge=0, description="Requests per second per end user (a "
                                   "verified token's subject), sustained, in a bucket of the user's own beside "
                                   "the bucket of the API key the request came through, if any; 0: each user's "
                                   "bucket has the user's role limit (roles, else rate_per_s).")
    user_burst: int = Field(default=20, ge=1, description="Requests per end user allowed at once above "
                            "user_rate_per_s.")
    shared: bool = Field(default=False, description="Keep the rate-limit buckets of API keys and end users in "
                         "the store (store.dsn), so rate_per_s, roles and user_rate_per_s hold across every "
                         "worker and replica; client-address buckets (auth off) stay per process. Needs store.dsn.")
    shared_lease_s: float = Field(default=0.05, gt=0, le=1, description="With shared limits, each process takes "
                                  "tokens from the store this many seconds' worth of the rate at a time (at least "
                                  "one, at most the burst) and spends them locally, for at most one second; only "
                                  "the request that empties a lease waits on the store.")
    shared_fail_open: bool = Field(default=True, description="With shared limits and the store unreachable, limit "
                                   "with each process's own buckets (true) or refuse requests with "
                                   "store_unavailable (false). The switch is logged and shown by "
                                   "nl2sql_shared_limits_degraded.")
    shared_retry_s: float = Field(default=1.0, gt=0, description="After a store failure, how long shared limits "
                                  "stay on the fallback before trying the store again.")
    max_tracked_clients: int = Field(default=10_000, ge=1, description="Most rate-limit buckets kept in "
                                     "memory; the least recently seen key's bucket is dropped beyond it.")
    result_bytes_in_flight: int = Field(default=256 * 1024 * 1024, ge=1024, description="Bytes of query "
                                        "results held at once by one replica, across all requests (counted "
                                        "as rows arrive, freed when the response is sent); a query that would "
                                        "go beyond it answers 503 overloaded.")
    result_wait_s: float = Field(default=0.25, ge=0, description="How long a new query waits for result "
                                 "memory to free up when result_bytes_in_flight is spent, before 503.")
    unauthenticated_per_s: float = Field(default=1.0, gt=0, description="Requests per second refused for a "
                                         "missing or invalid API key that one client address may send, "
                                         "sustained; beyond it that address's requests without a known key "
                                         "answer 429 before any key lookup.")
    unauthenticated_burst: int = Field(default=20, ge=1, description="Refused requests one client address "
                                       "may send at once above unauthenticated_per_s.")


class LLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint; OPENAI_BASE_URL if unset.")
    api_key: SecretStr | None = Field(default=None, description="Environment only; OPENAI_API_KEY if unset.")
    model: str | None = Field(default=None, description="Model name; /v1/ask answers llm_not_configured without it.")
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature.")
    timeout_s: float = Field(default=60.0, gt=0, description="Timeout of one LLM call.")
    max_retries: int = Field(default=2, ge=0, le=10, description="Retries on 429, 5xx and timeouts, with backoff.")
    max_concurrency: int = Field(default=64, ge=1, description="Most LLM calls in flight at once.")
    max_queued: int = Field(default=256, ge=0, description="Most calls waiting for one of the max_concurrency "
                            "slots; beyond it a question answers 503 overloaded at once instead of queueing.")
    breaker_failures: int = Field(default=5, ge=1, description="Consecutive failed LLM calls (after their "
                                  "retries) that open the circuit breaker.")
    breaker_open_s: float = Field(default=30.0, gt=0, description="Seconds an open breaker answers "
                                  "llm_unavailable without calling the endpoint; then one probe call decides.")
    daily_token_budget_per_user: int = Field(default=0, ge=0, description="LLM tokens (prompt and completion) "
                                             "one owner (the end user, else the API key, else the X-Client-Id "
                                             "with auth off) may spend per UTC day, counted in the store; a "
                                             "question asked once it is spent answers 429 token_budget_exceeded "
                                             "until midnight UTC. 0 turns the budget off. Needs store.dsn.")
    token_budget_fail_open: bool = Field(default=True, description="With the store unreachable, answer "
                                         "questions without checking the budget (true) or refuse them with "
                                         "store_unavailable (false).")


class ContextSettings(BaseModel):
    """What the prompts are told about a database: schema cache, pruning budget, sample values."""

    model_config = ConfigDict(extra="forbid")

    schema_ttl_s: float = Field(default=300.0, gt=0, description="Seconds an introspected schema (and its "
                                "sample values) is reused before it is read again.")
    refresh_timeout_s: float = Field(default=60.0, gt=0, description="Longest a schema refresh (introspection, "
                                     "sample values and the context's indexes) may take; beyond it the refresh "
                                     "fails and the last snapshot keeps serving. A refresh runs in the "
                                     "background; a database of 10,000 tables takes 10-30 s on 2 cores.")
    stale_wait_s: float = Field(default=1.0, ge=0, description="Longest a question waits for a schema refresh "
                                "when an older snapshot exists; beyond it the question uses the older one.")
    schema_check_s: float = Field(default=10.0, ge=0, description="Seconds between cheap checks of a database's "
                                  "catalog version (a fingerprint of pg_class, pg_description, pg_constraint); "
                                  "when it changed (a table added, a column altered, a comment edited), the "
                                  "schema is read again in the background while the old snapshot keeps "
                                  "serving, so schema changes reach prompts without a restart or waiting for "
                                  "`schema_ttl_s`. 0 turns the check off.")
    warm_start: bool = Field(default=True, description="Read the schema of every database of at least "
                             "`warm_start_tables` tables in the background as the gateway starts, so the first "
                             "question does not wait for introspection; `/readyz` reports its progress under "
                             "`schemas` (it does not wait for it).")
    warm_start_tables: int = Field(default=500, ge=0, description="Databases with fewer tables and views (one "
                                   "count at start) are read on their first question instead, which takes well "
                                   "under a second: no background reads on the connections meanwhile. 0: warm "
                                   "every database.")
    token_budget: int = Field(default=4000, ge=200, description="Most tokens (about 4 characters each) of "
                              "schema text in a prompt; larger schemas are pruned to the question's tables.")
    sample_values: int = Field(default=6, ge=0, le=50, description="Sample values shown per low-cardinality "
                               "text column.")
    low_cardinality_max: int = Field(default=50, ge=1, le=10_000, description="A text column with at most this "
                                     "many distinct values is sampled and used for value matching.")
    value_match_threshold: float = Field(default=0.45, gt=0, le=1, description="Least trigram similarity "
                                         "between a phrase of the question and a stored value to suggest it.")
    max_value_hints: int = Field(default=8, ge=0, description="Most value hints (phrase -> stored literal) "
                                 "in a prompt.")
    examples: int = Field(default=3, ge=0, le=20, description="Verified examples similar to the question "
                          "shown in a prompt.")
    scoped_views_max: int = Field(default=256, ge=1, description="Most callers' views of a schema snapshot "
                                  "kept in memory, one per (database, Postgres role, row-policy values): the "
                                  "schema cut to what the role may read and sample values read under its row "
                                  "policy. The least recently used is dropped beyond it (and rebuilt on its next "
                                  "question: one catalog query plus the reads of row-secured tables).")


_ASYMMETRIC_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                                    "ES512", "EdDSA"})


class IntrospectionSettings(BaseModel):
    """RFC 7662 token introspection: how tokens that are not JWTs (opaque access tokens) are checked."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The authorization server's introspection endpoint (its metadata's "
                     "`introspection_endpoint`).")
    client_id: str = Field(description="The gateway's client id at the introspection endpoint (HTTP Basic).")
    secret: SecretStr | None = Field(default=None, description="That client's secret; environment only "
                                     "(NL2SQL_AUTH__OIDC__INTROSPECTION__SECRET).")


class OidcSettings(BaseModel):
    """End users: OAuth 2.1 / OIDC access tokens from one authorization server, beside API keys.

    A bearer token that is not a gateway API key (``nl2sql_...``) is checked as an access token: its
    signature against the issuer's published keys (JWKS), its issuer, audience and lifetime; the principal
    (role, databases, Postgres role, row-policy values, scopes) is built from its claims as mapped here.
    """

    model_config = ConfigDict(extra="forbid")

    issuer: str = Field(description="The authorization server's issuer URL, exactly as in the tokens' `iss` "
                        "(e.g. https://login.example.com/realms/acme).")
    audience: str | list[str] = Field(description="The `aud` value(s) a token must carry to be accepted here "
                                      "(the gateway's API identifier / client id at the IdP); required, so a "
                                      "token issued for another service is refused.")
    jwks_url: str | None = Field(default=None, description="Where the signing keys are published; unset: the "
                                 "`jwks_uri` of `<issuer>/.well-known/openid-configuration`, else of the RFC 8414 "
                                 "`oauth-authorization-server` metadata.")
    algorithms: list[str] = Field(default=["RS256", "PS256", "ES256"], min_length=1,
                                  description="Signature algorithms accepted (asymmetric only: RS*, PS*, ES*, "
                                  "EdDSA); a token's `alg` must be listed and fit its key's type.")
    leeway_s: float = Field(default=30.0, ge=0, le=300, description="Clock skew allowed on `exp`, `nbf` and "
                            "`iat`, in seconds.")
    jwks_cache_ttl_s: float = Field(default=300.0, gt=0, description="Seconds the published keys are reused "
                                    "before they are fetched again (a failed fetch keeps the cached keys).")
    jwks_refresh_interval_s: float = Field(default=60.0, ge=0, description="Least time between two JWKS "
                                           "fetches: a token with an unknown `kid` fetches the keys at most once "
                                           "per interval (concurrent misses share one fetch); otherwise 401.")
    http_timeout_s: float = Field(default=5.0, gt=0, description="Timeout of one request to the authorization "
                                  "server (discovery, JWKS, introspection).")
    max_token_bytes: int = Field(default=16_384, ge=256, description="Largest bearer token accepted; a larger one "
                                 "answers 401 before any parsing.")
    token_cache_ttl_s: float = Field(default=30.0, ge=0, description="Seconds a validated token's principal is "
                                     "reused (never past the token's `exp`); 0: validate every request.")
    token_cache_max: int = Field(default=10_000, ge=1, description="Most validated tokens kept in that cache "
                                 "(least recently used dropped beyond it).")
    user_claim: str = Field(default="sub", description="The claim holding the stable end-user id (the owner of "
                            "conversations, feedback and audit rows).")
    email_claim: str = Field(default="email", description="The claim holding the user's e-mail (see `log_email`).")
    log_email: bool = Field(default=False, description="Name the user by e-mail in logs and whoami; false: "
                            "only the stable user id appears.")
    role_claim: str | None = Field(default=None, description="Claim (dotted path, e.g. `realm_access.roles`) "
                                   "whose value or list of values is mapped by `role_map`.")
    role_map: dict[str, Literal["client", "dba", "admin"]] = Field(
        default_factory=dict, description="Claim value -> gateway role; the highest mapped value wins; a token "
        "with no mapped value is a `client`.")
    databases_claim: str | None = Field(default=None, description="Claim (dotted path) listing the databases "
                                        "the user may use (a string or a list; `*`: every one).")
    databases: list[str] = Field(default_factory=list, description="Databases every end user may use, besides "
                                 "`databases_claim`; with neither, an end user may use no database.")
    pg_role: str | None = Field(default=None, description="Postgres role every end user's queries run as "
                                "(SET LOCAL ROLE), unless `pg_role_claim` maps to another.")
    pg_role_claim: str | None = Field(default=None, description="Claim (dotted path) whose value(s) pick the "
                                      "Postgres role through `pg_role_map`.")
    pg_role_map: dict[str, str] = Field(default_factory=dict, description="Claim value -> Postgres role (an "
                                        "allowlist: a claim value is never used as a role name itself); the "
                                        "first entry whose key the token carries wins.")
    policy_claims: dict[str, str] = Field(default_factory=dict, description="Row-policy name -> claim (dotted "
                                          "path) giving its value. Strings, integers and booleans only; any other "
                                          "value (list, object, float, null) counts as missing.")
    required_scopes: list[str] = Field(default_factory=list, description="Scopes every token must carry "
                                       "(`scope`, space-separated, or `scp`); else 403 insufficient_scope.")
    introspection: IntrospectionSettings | None = Field(default=None, description="RFC 7662 introspection for "
                                                        "opaque (non-JWT) tokens; unset: only JWTs are accepted.")
    resource_url: str | None = Field(default=None, description="This gateway's public URL as an OAuth protected "
                                     "resource (RFC 9728 `resource`, e.g. https://gateway.example.com/mcp).")
    authorization_servers: list[str] = Field(default_factory=list, description="Authorization servers named "
                                             "in the protected-resource metadata; empty: `[issuer]`.")
    scopes_supported: list[str] = Field(default_factory=list, description="Scopes named in the "
                                        "protected-resource metadata; empty: every scope of the four "
                                        "`*_scopes` below.")
    # What an end user's token must grant per kind of operation (gateway.auth.scopes), on every transport:
    # any one of the listed scopes will do; an empty list lets every token through. API keys are never
    # scope-limited. The first scope of each list is the one a 403 insufficient_scope asks for.
    schema_scopes: list[str] = Field(default=["nl2sql:schema", "nl2sql:query", "nl2sql:ask"], description=(
        "Scopes that let a token read what it may query: list_databases, describe_schema, search_schema, the "
        "MCP resources, GET /v1/databases[/{name}/schema]. Any one suffices (writing SQL or asking implies "
        "reading the schema); empty: no scope needed."))
    query_scopes: list[str] = Field(default=["nl2sql:query"], description="Scopes that let a token run or "
                                    "check its own SQL: run_sql, check_sql, POST /v1/sql and /v1/check.")
    ask_scopes: list[str] = Field(default=["nl2sql:ask"], description="Scopes that let a token ask questions "
                                  "the gateway's LLM answers: ask, POST /v1/ask (and its stream).")
    feedback_scopes: list[str] = Field(default=["nl2sql:feedback", "nl2sql:ask"], description="Scopes that let "
                                       "a token give feedback on answers: give_feedback, POST /v1/feedback.")
    console_client_id: str | None = Field(default=None, description="The web console's OAuth client id at the "
                                          "authorization server: a public client (no secret, PKCE S256) whose "
                                          "redirect URI is the console's own URL (https://<gateway>/console/). "
                                          "Unset: the console signs in with API keys only.")
    console_scopes: list[str] = Field(default_factory=list, description="Scopes the console asks for; empty: "
                                      "`openid`, `offline_access` (a refresh token), `required_scopes` and every "
                                      "operation's scopes (`schema_scopes`, `query_scopes`, ...).")
    console_resource: str | None = Field(default=None, description="RFC 8707 `resource` the console sends with "
                                         "its authorization and token requests, for an authorization server that "
                                         "picks the token's audience from it; unset: none is sent.")

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: list[str]) -> list[str]:
        refused = [alg for alg in value if alg not in _ASYMMETRIC_ALGORITHMS]
        if refused:
            raise ValueError(f"{refused} refused: only asymmetric algorithms "
                             f"({', '.join(sorted(_ASYMMETRIC_ALGORITHMS))}) may sign access tokens; "
                             "HS* would let anyone holding the public key forge tokens, none is unsigned")
        return value

    @field_validator("audience")
    @classmethod
    def _some_audience(cls, value: str | list[str]) -> str | list[str]:
        if not value or (isinstance(value, list) and not all(value)):
            raise ValueError("audience must name this gateway (a non-empty string or list)")
        return value

    @property
    def audiences(self) -> list[str]:
        return [self.audience] if isinstance(self.audience, str) else list(self.audience)

    @property
    def resource_scopes(self) -> list[str]:
        """The protected-resource metadata's ``scopes_supported``: as configured, else every operation's scopes."""
        if self.scopes_supported:
            return list(self.scopes_supported)
        every = self.schema_scopes + self.query_scopes + self.ask_scopes + self.feedback_scopes
        return list(dict.fromkeys(every))

    @property
    def console_scope_list(self) -> list[str]:
        """The scopes the console asks for: as configured, else ``openid offline_access``, the required scopes
        and every operation's scopes (the console reads schemas, runs SQL, asks and gives feedback)."""
        if self.console_scopes:
            return list(self.console_scopes)
        return list(dict.fromkeys(["openid", "offline_access", *self.required_scopes, *self.resource_scopes]))

    @property
    def resource_authorization_servers(self) -> list[str]:
        """The protected-resource metadata's ``authorization_servers``: as configured, else the issuer."""
        return self.authorization_servers or [self.issuer]


class AuthSettings(BaseModel):
    """Access control: API keys (stored hashed in the store) with a role, databases and a Postgres role."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Require an API key (Authorization: Bearer ...) on every "
                          "/v1 route; needs store.dsn. Off only for local use: the server then refuses to listen "
                          "on anything but a loopback address.")
    cache_ttl_s: float = Field(default=5.0, ge=0, description="Seconds a key looked up in the store is reused "
                               "without asking the store again; a revoked key stops working within this time.")
    cache_max_keys: int = Field(default=10_000, ge=1, description="Most key lookups (found or not) kept in the "
                                "cache; the oldest are dropped beyond it.")
    lookup_timeout_s: float = Field(default=2.0, gt=0, description="Longest wait for the store when a key is "
                                    "not cached; beyond it the request answers 503 store_unavailable.")
    oidc: OidcSettings | None = Field(default=None, description="End-user OAuth 2.1 / OIDC access tokens beside "
                                      "API keys ([auth.oidc]); unset: API keys only.")


class LoggingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(default="INFO", description="Log level.")
    json_logs: bool | None = Field(
        default=None, description="JSON lines (true) or human-readable console lines (false); unset: JSON unless "
        "stderr is a terminal.")


class Settings(BaseSettings):
    """Everything the gateway reads at start-up. Build it with :func:`load_settings`, never at import time."""

    model_config = SettingsConfigDict(env_prefix="NL2SQL_", env_nested_delimiter="__", extra="forbid")

    databases: dict[str, DatabaseSettings] = Field(default_factory=dict, description="Named target databases.")
    server: ServerSettings = Field(default_factory=ServerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    templates: TemplatesSettings = Field(default_factory=TemplatesSettings)
    magic: MagicSettings = Field(default_factory=MagicSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    backpressure: BackpressureSettings = Field(default_factory=BackpressureSettings)
    rules_dir: Path = Field(default=Path("rules"), description="Folder of DBA rule files, one per database.")
    rules_state_dir: Path | None = Field(
        default=None, description="Folder where each database's last good rule set is saved (NAME.json, "
        "written atomically on every good load) so that a fresh process (a respawned worker, a restarted "
        "replica) whose rule files are broken or gone starts from it. Default: `.RULES.last-good` beside "
        "rules_dir (`.rules.last-good`); set it to a writable folder when rules_dir's parent is read-only.")
    semantic_dir: Path | None = Field(
        default=None, description="Folder of semantic model files (NAME.yaml or NAME/*.yaml, native format: "
        "metrics, dimensions, synonyms and their SQL; docs/semantic-layer.md), e.g. \"semantic\". Reloaded on "
        "change; a broken edit keeps the last good model. Unset: no semantic layer (the demo uses the shipped one).")
    guidelines_dir: Path = Field(
        default_factory=lambda: shipped_dir("guidelines"),
        description="Folder of guideline Markdown files (default: the shipped guidelines, whatever the working "
        "directory: the checkout's guidelines/ or the installed package's copy).")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment beats the file; explicit arguments (tests, the demo) beat both.
        return (init_settings, env_settings, _TomlFileSource(settings_cls))

    def database(self, name: str) -> DatabaseSettings | None:
        return self.databases.get(name)


class _TomlFileSource(PydanticBaseSettingsSource):
    """Reads the TOML config file and refuses secrets in it."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = config_path()
        if path is None:
            return {}
        data = _read_toml(path)
        _refuse_secrets(data, str(path))
        return data


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc


# The config file a caller named (the CLI's --config), while load_settings builds the settings with it: passed
# down explicitly rather than through os.environ, which every later load in the process would also read.
_CONFIG_FILE: ContextVar[Path | None] = ContextVar("config_file", default=None)


def config_path() -> Path | None:
    given = _CONFIG_FILE.get()
    if given is not None:
        if not given.is_file():
            raise ConfigError(f"config file {given} is not a file")
        return given
    explicit = os.environ.get("NL2SQL_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"NL2SQL_CONFIG points to {path}, which is not a file")
        return path
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def _refuse_secrets(data: Any, where: str) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            here = f"{where}: {key}"
            if key.lower() in SECRET_KEYS:
                raise ConfigError(
                    f"{here}: secrets belong in the environment (NL2SQL_...__{key.upper()}), not the file")
            if key == "dsn" and isinstance(value, str) and urlsplit(value).password:
                raise ConfigError(
                    f"{here}: the DSN carries a password; secrets belong in the environment (NL2SQL_...__PASSWORD)")
            _refuse_secrets(value, here)
    elif isinstance(data, list):
        for item in data:
            _refuse_secrets(item, where)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings from defaults, the config file, the environment and ``overrides``.

    ``config_file``: read this TOML file instead of ``NL2SQL_CONFIG`` or ``./nl2sql-gateway.toml``.
    """
    token = _CONFIG_FILE.set(config_file)
    try:
        settings = Settings(**overrides)
    except ConfigError:
        raise
    except ValidationError as exc:  # name the file or variable, the key, what was expected, the likely key
        from gateway.config.errors import describe

        path = config_path()
        raise ConfigError(describe(exc, Settings, path, _read_toml(path) if path else {})) from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    finally:
        _CONFIG_FILE.reset(token)
    llm = settings.llm
    if llm.base_url is None and os.environ.get("OPENAI_BASE_URL"):
        llm.base_url = os.environ["OPENAI_BASE_URL"]
    if llm.api_key is None and os.environ.get("OPENAI_API_KEY"):
        llm.api_key = SecretStr(os.environ["OPENAI_API_KEY"])
    return settings


def connect_dsn(dsn: str, password: SecretStr | None) -> tuple[str, str | None]:
    """The DSN and password to hand to the driver (passwords stay out of the DSN and of logs)."""
    return dsn, password.get_secret_value() if password else None
