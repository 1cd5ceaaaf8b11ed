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
