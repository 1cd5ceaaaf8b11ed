"""Request and response bodies of the HTTP API (they are the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SqlRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database: str = Field(description="Name of a configured target database (see GET /v1/databases).",
                          min_length=1, max_length=128)
    sql: str = Field(description="One read-only statement: SELECT, WITH, VALUES, TABLE, set operations or "
                     "EXPLAIN without ANALYZE.", min_length=1)
    max_rows: int | None = Field(default=None, ge=1, description="Return at most this many rows; capped by "
                                 "the database's limits.max_rows. More rows set `truncated`.")


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sql: str = Field(description="The statement to check.", min_length=1)
    database: str | None = Field(default=None, description="Check with this database's policy (allowlist "
                                 "additions, hidden objects, complexity limits); the default policy otherwise.")


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


class Problem(BaseModel):
    """An ``application/problem+json`` body (RFC 9457) with the gateway's stable ``code``."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    code: str
    request_id: str | None = None


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The question in natural language.", min_length=1, max_length=4000)
    database: str = Field(description="Name of a configured target database (see GET /v1/databases).",
                          min_length=1, max_length=128)
    evidence: str | None = Field(default=None, max_length=8000, description="Domain knowledge that helps "
                                 "answer, e.g. 'active customers means is_active = true'.")
    max_rows: int | None = Field(default=None, ge=1, description="Return at most this many rows; capped by "
                                 "the database's limits.max_rows.")


class AskFindingOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    code: str = Field(description="exec_error, blocked, no_sql, empty_result, null_heavy, count_mismatch, "
                      "grouping_mismatch, duplicate_rows, truncated, rule_violation, llm_judge or repeated_sql. "
                      "Extra members: sqlstate/position/hint (exec_error), codes (blocked), rule ...")
    message: str


class AttemptOut(BaseModel):
    n: int = Field(description="1 for the generation, then one per reflection.")
    source: str = Field(description="`generation` or `reflection`.")
    sql: str | None = Field(description="The SQL read from the LLM's answer; null when there was none.")
    passed: bool = Field(description="Ran, and no finding calls for a reflection under the database's policy.")
    findings: list[AskFindingOut]
    row_count: int | None = Field(description="Rows returned when the SQL ran; null when it did not run.")
    guideline_applied: bool = Field(description="The active guideline was in this attempt's prompt.")
    timings: dict[str, float] = Field(description="Milliseconds: llm_ms, check_ms, db_ms, acquire_ms, total_ms.")
    tokens: dict[str, int] = Field(description="LLM tokens of this attempt: prompt, completion.")


class AskResponse(BaseModel):
    status: str = Field(description="`ok`, `suspicious` (answered, findings remain), `failed` or `blocked`.")
    database: str
    sql: str | None = Field(description="The SQL of the chosen attempt.")
    columns: list[ColumnOut]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    findings: list[AskFindingOut] = Field(description="Findings left on the chosen attempt.")
    attempts: list[AttemptOut]
    stop_reason: str = Field(description="passed, repeated_sql, max_iterations, time_budget, llm_unavailable, "
                             "deadline_exceeded or llm_bad_output.")
    guideline_version: str | None = Field(description="The database's active guideline version.")
    guideline_applied: bool = Field(description="The guideline was shown to the LLM in at least one attempt.")
    request_id: str | None
