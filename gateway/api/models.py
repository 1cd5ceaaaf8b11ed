"""Request and response bodies of the HTTP API (they are the OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.findings import CODES


class RequestBody(BaseModel):
    """Base of every request body: unknown members are refused, and so is NUL in any string.

    Postgres text cannot hold U+0000 (the store, the audit and the target's query text all refuse it), so a
    string carrying one is a 422 ``invalid_request`` here rather than a driver error later.
    """

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if _holds_nul(value):
            raise ValueError("must not contain the NUL character (U+0000): Postgres text cannot hold it")
        return value


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple | set | frozenset):
        return any(_holds_nul(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    return False


class SqlRequest(RequestBody):

    database: str = Field(description="Name of a configured target database (see GET /v1/databases).",
                          min_length=1, max_length=128)
    sql: str = Field(description="One read-only statement: SELECT, WITH, VALUES, TABLE, set operations or "
                     "EXPLAIN without ANALYZE.", min_length=1)
    max_rows: int | None = Field(default=None, ge=1, description="Return at most this many rows; capped by "
                                 "the database's limits.max_rows. More rows set `truncated`.")


class CheckRequest(RequestBody):

    sql: str = Field(description="The statement to check.", min_length=1)
    database: str | None = Field(default=None, description="Check with this database's policy (allowlist "
                                 "additions, hidden objects, complexity limits). Without it the SQL is allowed "
                                 "only when every configured database the key may use allows it.")


class FindingOut(BaseModel):
    code: str = Field(description="Stable machine code, e.g. `function_blocked`.")
    message: str = Field(description="Names the offending clause or function.")
    clause: str | None = None
    position: int | None = Field(default=None, description="0-based character offset in the SQL, when known.")


class VerdictOut(BaseModel):
    allowed: bool
    statement_kind: str | None = Field(default=None, description="`select` or `explain` when allowed.")
    codes: list[str]
    findings: list[FindingOut]
    executed_sql: str | None = Field(default=None, description="On a database with row filters (rules "
                                     "`row_filter`): the rewritten text that would run for this caller, with "
                                     "its claims as `$n` parameters.")


class ColumnOut(BaseModel):
    name: str
    type: str = Field(description="Postgres type name, e.g. `int8`, `numeric`, `timestamptz`, `jsonb`.")


class SqlResponse(BaseModel):
    database: str
    verdict: VerdictOut
    columns: list[ColumnOut]
    rows: list[list[Any]] = Field(description="Rows as arrays in column order. numeric values are exact "
                                  "decimal strings, intervals ISO 8601 durations, bytea `\\x` hex.")
    row_count: int
    truncated: bool = Field(description="True when the query produced more rows than returned.")
    timings: dict[str, float] = Field(description="Milliseconds: check_ms, acquire_ms, db_ms, total_ms.")
    request_id: str


class CheckResponse(BaseModel):
    verdict: VerdictOut
    request_id: str


class DatabaseOut(BaseModel):
    name: str
    description: str
    max_rows: int
    statement_timeout_ms: int


class DatabasesResponse(BaseModel):
    databases: list[DatabaseOut]


class AboutLLM(BaseModel):
    model: str | None
    endpoint: str | None = Field(description="Scheme, host and port of the LLM endpoint; null for a client key.")


class LatencyPoint(BaseModel):
    t: str = Field(description="The interval's start (ISO 8601, UTC).")
    n: int = Field(description="Requests finished in the interval.")
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


class About(BaseModel):
    version: str
    started_at: str = Field(description="When this process's gateway opened (ISO 8601, UTC).")
    uptime_s: float
    store: bool = Field(description="Whether a feedback store is configured.")
    llm: AboutLLM | None = Field(description="Null when no LLM is configured (only verified questions answer).")
    latency: list[LatencyPoint] = Field(default_factory=list, description="This process's `/v1` and `/mcp` "
                                        "latency per 10 s interval, oldest first, the last ten minutes.")


class AuditedAnswerOut(BaseModel):
    request_id: str
    database: str
    question: str
    status: str = Field(description="The answer's final status (`ok`, `suspicious`, `failed` ...).")
    sql: str | None = Field(description="The chosen attempt's SQL (rows are never kept: run it again to see them).")
    attempts: list[dict[str, Any]] = Field(description="Every attempt: SQL, findings, timings (no rows).")
    guideline_version: str | None
    created_at: str | None = Field(description="When it was answered (ISO 8601).")
    yours: bool | None = Field(default=None, description="On `GET /v1/answers/{request_id}`: whether the caller "
                               "asked it (a dba may see others' answers on its databases).")


class HistoryResponse(BaseModel):
    answers: list[AuditedAnswerOut]


class ConsoleRules(RequestBody):
    hidden_columns: list[str] = Field(default_factory=list, max_length=1000,
                                      description="`table.column` names to hide (the console's file only; "
                                      "columns other rule files hide stay hidden).")
    instructions: list[str] = Field(default_factory=list, max_length=200,
                                    description="Instructions to the model, in order, after the other files'.")
    limits: dict[str, int] = Field(default_factory=dict, description="`max_rows`, `max_joins`, "
                                   "`max_subquery_depth`: only ones no other rule file of the database sets.")


class ShippedGuideline(BaseModel):
    database: str
    version: str = Field(description="`default` (default.md) or `file:<database>.md`, as answers report it.")
    text: str


class StarterOut(BaseModel):
    question: str = Field(description="A question the database is known to answer well, as stored.")
    source: str = Field(description="Where it comes from: `verified` (an approved example).")


class StartersResponse(BaseModel):
    starters: list[StarterOut]


class Problem(BaseModel):
    """An ``application/problem+json`` body (RFC 9457) with the gateway's stable ``code``."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    code: str
    request_id: str | None = None


class AskRequest(RequestBody):

    question: str = Field(description="The question in natural language.", min_length=1, max_length=4000)
    database: str = Field(description="Name of a configured target database (see GET /v1/databases).",
                          min_length=1, max_length=128)
    evidence: str | None = Field(default=None, max_length=8000, description="Domain knowledge that helps "
                                 "answer, e.g. 'active customers means is_active = true'.")
    max_rows: int | None = Field(default=None, ge=1, description="Return at most this many rows; capped by "
                                 "the database's limits.max_rows.")
    conversation_id: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$",
        description="Continue this conversation (the `conversation_id` of an earlier answer): the question is "
        "read as a follow-up ('and by month?', 'only 2024') or as the reply to a clarifying question, with the "
        "earlier turns' questions, SQL and result shapes (never rows) in the prompt. Only the API key (with "
        "auth off: the `X-Client-Id`) that started a conversation can continue it, on the same database; any "
        "other id answers `unknown_conversation`. Leave it out to start a new conversation.")


class ClarificationOut(BaseModel):
    question: str = Field(description="The question to put to the user; answer it as the next turn of the "
                          "same conversation.")
    options: list[str] = Field(description="Choices the model offered, when it gave any (may be empty).")


class AskFindingOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    code: str = Field(description=", ".join(c.name for c in CODES.values() if c.family != "safety") + " (the "
                      "README's finding codes). Extra members: error/sqlstate/position/hint (exec_error), codes "
                      "(blocked, the safety codes), rule (rule_violation) ...")
    message: str


class AttemptOut(BaseModel):
    n: int = Field(description="1 for the generation (1 to n for `ask.candidates` = n), then one per reflection.")
    source: str = Field(description="`generation`, `candidate` (one of several first-pass candidates), "
                        "`reflection`, `verified_example` or `semantic_model` (SQL compiled from the semantic "
                        "model's definitions for the metric query the LLM picked).")
    sql: str | None = Field(description="The SQL read from the LLM's answer; null when there was none.")
    passed: bool = Field(description="Ran, and no finding calls for a reflection under the database's policy.")
    findings: list[AskFindingOut]
    row_count: int | None = Field(description="Rows returned when the SQL ran; null when it did not run.")
    guideline_applied: bool = Field(description="The active guideline was in this attempt's prompt.")
    timings: dict[str, float] = Field(description="Milliseconds: llm_ms, check_ms, db_ms, acquire_ms, total_ms.")
    tokens: dict[str, int] = Field(description="LLM tokens of this attempt: prompt, completion.")
    candidate: dict[str, Any] | None = Field(default=None, description="Only on candidates: the prompt `variant` "
                                             "(`plain` for the first) and the `temperature` it was drawn with.")
    metric_query: dict[str, Any] | None = Field(default=None, description="Only with source `semantic_model`: "
                                                "the metrics, dimensions, filters, grain, order and limit picked.")


class AskResponse(BaseModel):
    status: str = Field(description="`ok`, `suspicious` (answered, findings remain), `failed`, `blocked` or "
                        "`needs_clarification` (the question is ambiguous: `clarification` says what to ask the "
                        "user; no SQL ran).")
    database: str
    sql: str | None = Field(description="The SQL of the chosen attempt.")
    columns: list[ColumnOut]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    findings: list[AskFindingOut] = Field(description="Findings left on the chosen attempt.")
    attempts: list[AttemptOut]
    stop_reason: str = Field(description="passed, repeated_sql, max_iterations, time_budget, llm_unavailable, "
                             "deadline_exceeded, llm_bad_output or clarification.")
    guideline_version: str | None = Field(description="The database's active guideline version.")
    guideline_applied: bool = Field(description="The guideline was shown to the LLM in at least one attempt.")
    request_id: str | None
    candidates: dict[str, Any] | None = Field(
        default=None, description="Only with `ask.candidates` > 1: `n`, `groups` (candidates that ran, grouped "
        "by equal results: `attempts`, `size`, `passed`; only passing ones when any passed; largest first), "
        "`others` (the finished candidates in no group) and `cancelled` (left "
        "running once a majority agreed), `chosen` (the attempt number), `selection` (`unanimous`, "
        "`largest_group`, `tie_first`, `tie_selector`, `none_passed`, `none_ran`), `agreement` (share of the n in the "
        "chosen group) and, when the LLM broke a tie, `selector`.")
    conversation_id: str | None = Field(default=None, description="The conversation this answer is a turn of: "
                                        "send it with the next question to follow up. Null without a store.")
    clarification: ClarificationOut | None = Field(default=None, description="With `needs_clarification`: "
                                                   "what to ask the user.")
    trusted: dict[str, Any] | None = Field(default=None, description="Only when a DBA's template answered "
                                           "(source `template`, no LLM): `template` (its name), `parameters` "
                                           "(the values bound) and `run` (the route to re-run it with other "
                                           "values).")
    compiled_from: str | None = Field(default=None, description="`semantic_model` when the chosen SQL was "
                                      "compiled from the semantic model's metric definitions, not generated.")


class FeedbackRequest(RequestBody):

    request_id: str = Field(description="The `request_id` of a `POST /v1/ask` answer.", min_length=1,
                            max_length=128)
    verdict: Literal["correct", "incorrect"] = Field(description="Whether the answer was right.")
    corrected_sql: str | None = Field(default=None, min_length=1, description="With `incorrect`: the SQL that "
                                      "answers the question. It must pass the safety check and run; it then "
                                      "becomes a correction and a proposed example (approved at once when a "
                                      "dba or admin key sends it).")
    note: str | None = Field(default=None, max_length=4000, description="Free text for the DBA.")


class FeedbackResponse(BaseModel):
    feedback_id: int
    request_id: str
    client_id: str = Field(description="From the `X-Client-Id` header (`anonymous` without one).")
    verdict: str
    correction_id: int | None = Field(description="The correction stored from `corrected_sql`.")
    example_id: int | None = Field(description="The example stored (question and its SQL).")
    example_status: str | None = Field(default=None, description="`proposed` until a dba or admin reviews it "
                                       "(`POST /v1/examples/{id}/approve`), `approved` when a dba or admin "
                                       "key sent the feedback, `rejected` when a DBA turned the pair down.")
    created_at: str
    created: bool = Field(description="False when this exact feedback had been recorded before (idempotent).")


def _scope_field() -> Any:
    return Field(default=None, max_length=128, description="A configured database: that database's own "
                 "versions. Null or absent: the global scope (versions every database without its own uses).")


class GuidelineSummary(BaseModel):
    version: int
    parent: int | None
    status: str = Field(description="`candidate`, `active` or `retired` (active within its scope).")
    database: str | None = Field(default=None, description="The database this version is for; null: global "
                                 "(used by every database without an active version of its own).")
    created_at: str
    activated_at: str | None
    corrections: int = Field(description="How many corrections' feedback went into this version.")
    evaluation_passed: bool | None = Field(description="The activation gate's verdict, when evaluated.")


class RegressionReportOut(BaseModel):
    id: int
    guideline_version: int | None = Field(description="The candidate version the replay judged.")
    database: str | None = Field(description="The version's scope; null: global.")
    subject: str = Field(description="What was replayed (`guideline v3`).")
    actor: str = Field(description="Who asked for the activation that ran the replay.")
    regressed: int = Field(description="Verified questions right before and wrong with the change (over the "
                           "whole replay; `report` lists only those of databases the key may use).")
    passed: bool = Field(description="True when no verified question regressed.")
    counts: dict[str, int] = Field(description="replayed, regressed, fixed, kept, still_wrong, suspect.")
    created_at: str
    report: dict[str, Any] | None = Field(default=None, description="The whole report: `regressions` (question, "
                                          "reason, before_sql, after_sql), `items` (each verified question: "
                                          "`verdict`, `suspect`, `before` and `after` with status, SQL, reason, "
                                          "LLM calls, tokens, latency) and `cost` per side.")


class RegressionReports(BaseModel):
    reports: list[RegressionReportOut] = Field(description="Newest first; the first carries the whole report.")


class GuidelineInForce(BaseModel):
    database: str | None = Field(description="The database asked about; null: a database without its own "
                                 "version.")
    source: str = Field(description="`database` (its own version), `global` (the global version) or `default` "
                        "(the shipped guideline file).")
    version: int | None = Field(description="The stored version in force; null: the shipped file.")
    label: str = Field(description="As answers report it in `guideline_version` (`v3`, `default`, "
                       "`file:NAME.md`).")
    retired: int | None = Field(default=None, description="After a reset: the version it retired, if any.")


class GuidelineList(BaseModel):
    active: int | None = Field(description="The active global version (with `database`: the version that "
                               "database uses, its own or the global one); null: the shipped file is in force.")
    versions: list[GuidelineSummary]
    active_by_database: dict[str, int] = Field(default_factory=dict, description="Databases that have an "
                                               "active version of their own, with that version.")
    in_force: GuidelineInForce | None = Field(default=None, description="With `database`: what that "
                                              "database's questions use now.")


class GuidelineDetail(GuidelineSummary):
    text: str = Field(description="The guideline: numbered reminders with ask-to-myself questions.")
    provenance: dict[str, Any] = Field(description="corrections, feedbacks, run_id, trigger, batches, model, "
                                       "database.")
    evaluation: dict[str, Any] | None = Field(description="The activation gate's replay: `method` "
                                              "(`question_replay`: whole questions on held-out verified "
                                              "examples; `reflection_replay`: one reflection per held-out "
                                              "correction), `note` (why that method), counts, accuracies, "
                                              "`passed`, `reason` and per-item outcomes.")


class RegenerateRequest(RequestBody):

    activate: bool | None = Field(default=None, description="Run the gate and activate a passing candidate; "
                                  "magic.auto_activate when null. A candidate built from unreviewed "
                                  "corrections is never activated by a run (outcome `pending_review`).")
    database: str | None = Field(default=None, max_length=128, description="Use only this database's "
                                 "corrections and write a candidate for it; null: every database's corrections, "
                                 "a global candidate.")


class RegenerateResponse(BaseModel):
    outcome: str = Field(description="activated, candidate, pending_review (built from unreviewed "
                         "corrections: waits for a DBA to activate it), rejected or no_change.")
    run_id: int | None
    database: str | None = Field(default=None, description="The run's scope; null: global.")
    version: int | None
    counts: dict[str, int]
    llm_calls_by_purpose: dict[str, int]
    evaluation: dict[str, Any] | None
    error: str | None
    wall_s: float


class ActivateRequest(RequestBody):

    force: bool = Field(default=False, description="Skip the activation gate (a DBA's decision).")


class RollbackRequest(RequestBody):

    database: str | None = _scope_field()
    version: int | None = Field(default=None, ge=1, le=2**31 - 1, description="The version to go back to (it "
                                "must have been active before, in this scope); null: the one active before the "
                                "current one.")


class ResetRequest(RequestBody):

    database: str | None = _scope_field()


class GuidelineEventOut(BaseModel):
    id: int
    database: str | None = Field(description="The scope; null: global.")
    action: str = Field(description="`activate`, `rollback` or `reset` (back to the shipped default).")
    version: int | None = Field(description="Active after the event; null: none in this scope.")
    previous: int | None = Field(description="Active before the event.")
    actor: str = Field(description="Who: `key:ID`, `cli`, `regeneration run N` ...")
    detail: dict[str, Any]
    created_at: str


class GuidelineEvents(BaseModel):
    events: list[GuidelineEventOut]


class ExampleOut(BaseModel):
    id: int
    database: str
    question: str
    sql: str
    source: str = Field(description="`feedback` (an answer marked correct), `correction` (a corrected SQL) or "
                        "`dba`.")
    status: str = Field(description="`proposed`, `approved` or `rejected`. Only approved examples are used, as "
                        "few-shot examples and exact answers.")
    request_id: str | None
    proposed_by: str = Field(description="Who sent it: `key:<id>`, an `X-Client-Id` or `anonymous`.")
    proposed_at: str
    reviewed_by: str | None = Field(description="The dba or admin who approved or rejected it.")
    reviewed_at: str | None
    review_note: str | None = Field(description="Why, in the reviewer's words.")
    verdict: str | None = Field(default=None, description="On `GET /v1/examples`: the analyst's verdict on the "
                                "original answer (`correct` / `incorrect`), when it came from feedback.")
    note: str | None = Field(default=None, description="On `GET /v1/examples`: the analyst's note for the DBA.")
    original_sql: str | None = Field(default=None, description="On `GET /v1/examples`: the SQL of the answer "
                                     "the example came from (beside a correction, the SQL it corrects).")
    original_status: str | None = Field(default=None, description="On `GET /v1/examples`: that answer's status.")
    original_row_count: int | None = Field(default=None, description="On `GET /v1/examples`: how many rows it "
                                           "returned (the audit keeps no rows).")


class ExampleList(BaseModel):
    examples: list[ExampleOut]


class ReviewRequest(RequestBody):

    note: str | None = Field(default=None, max_length=4000, description="Why: kept with the decision.")


class WhoAmI(BaseModel):
    """The caller as the gateway sees it (the console offers only the pages this role may use)."""

    name: str = Field(description="The key's name; `anonymous` when access control is off.")
    role: Literal["client", "dba", "admin"] = Field(description="Roles nest: a dba may do what a client may.")
    databases: list[str] = Field(description="Databases the key may use (`*`: every one).")
    auth_enabled: bool = Field(description="False when the gateway runs without access control (loopback only).")
    user: str | None = Field(default=None, description="The end user's stable id (an OAuth access token's "
                             "subject); null for an API key.")
    client: str | None = Field(default=None, description="The OAuth client the token was issued to (`azp` or "
                               "`client_id`); null for an API key.")
    scopes: list[str] | None = Field(default=None, description="The scopes the token grants, sorted; null for an "
                                     "API key (not scope-limited).")
    policy: dict[str, str] = Field(default_factory=dict, description="The row-policy values taken from the "
                                   "token (name -> value), the caller's own.")
    store: bool = Field(default=False, description="Whether a feedback store is configured: without one, "
                        "feedback, conversations and example review answer `store_not_configured` (the console "
                        "then offers none of them).")


class ConditionOut(BaseModel):
    name: str
    applies_to: str
    sql: str
    message: str
    file: str
    line: int


class RuleProblemOut(BaseModel):
    file: str = Field(description="The rule file, relative to `rules_dir`.")
    line: int = Field(description="1-based; 0 when the whole file is at fault.")
    message: str
    severity: Literal["error", "warning"]


class RulesResponse(BaseModel):
    database: str
    files: list[str] = Field(description="The rule files in force, relative to `rules_dir`.")
    instructions: list[str]
    hidden_tables: list[str]
    hidden_columns: list[str] = Field(description="`table.column`, lower case.")
    extra_functions: list[str] = Field(description="Functions allowed beyond the built-in allowlist.")
    limits: dict[str, int]
    required_conditions: list[ConditionOut]
    result_checks: list[dict[str, Any]]
    problems: list[RuleProblemOut] = Field(description="What `nl2sql-gateway rules check` finds in the files "
                                           "against the live schema now (without `--role`).")
    privileges: list[str] = Field(description="What the gateway's role may do beyond the rules, from the last "
                                  "privilege check (empty when clean or not checked).")


# --- trusted answers: templates ---------------------------------------------------------------------------

class TemplateParameterIn(RequestBody):
    name: str = Field(min_length=1, max_length=63, description="The `{name}` slot in the example questions.")
    column: str = Field(min_length=3, max_length=300, description="The column its values come from: "
                        "`table.column` (`schema.table.column` outside public).")
    type: Literal["text", "integer", "number", "boolean"] | None = Field(
        default=None, description="Must agree with the column's type when given (it is taken from it).")
    default: str | int | float | bool | None = Field(default=None, description="A valid value: it fills the "
                                                     "starter question and the trial run.")


class TemplateCreate(RequestBody):
    database: str = Field(min_length=1, max_length=128)
    name: str = Field(min_length=1, max_length=63, description="Lower-case letters, digits and _.")
    sql: str | None = Field(default=None, min_length=1, max_length=100_000,
                            description="The SQL with `$1 .. $n` (default: the example's, which then needs none).")
    parameters: list[TemplateParameterIn] = Field(default_factory=list, max_length=10)
    questions: list[str] = Field(default_factory=list, max_length=20, description="Example questions with "
                                 "`{name}` slots (or spelling each default); default: the example's question.")
    description: str = Field(default="", max_length=2000)
    example_id: int | None = Field(default=None, ge=1, le=2**63 - 1, description="The approved example promoted.")


class TemplateParameterOut(BaseModel):
    name: str
    column: str
    type: str
    default: str | None = Field(default=None, description="Absent for a caller under a row policy.")
    values: list[str] | None = Field(default=None, description="Known values of a low-cardinality text column, "
                                     "as the caller may read them.")


class TemplateOut(BaseModel):
    name: str
    database: str
    description: str
    sql: str
    questions: list[str] = Field(description="Example questions with `{name}` slots.")
    parameters: list[TemplateParameterOut]
    uses: int = Field(description="Answers the template gave (asked or run).")
    starter: str | None = Field(description="The first question with the defaults filled in.")
    created_by: str | None = None
    created_at: str | None = None
    example_id: int | None = None
    last_used_at: str | None = None


class TemplateList(BaseModel):
    templates: list[TemplateOut]


class TemplateRun(RequestBody):
    parameters: dict[str, str | int | float | bool] = Field(default_factory=dict, max_length=10,
                                                            description="Values by parameter name.")
    max_rows: int | None = Field(default=None, ge=1, description="A lower row cap.")


class TemplateSuggestion(BaseModel):
    database: str
    question: str
    sql: str
    asked: int = Field(description="Answers audited for this question (case, spacing and end punctuation aside).")
    confirmed: int = Field(description="Of them, marked correct by their owner.")
    approved: int = Field(description="Approved examples with this question.")
    example_id: int | None = Field(description="The latest approved example, to promote.")


class TemplateSuggestions(BaseModel):
    suggestions: list[TemplateSuggestion]
