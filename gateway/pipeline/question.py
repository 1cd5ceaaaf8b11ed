"""The question the pipeline answers, as every entry point (HTTP, MCP, eval) hands it over."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Question:
    database: str
    question: str
    evidence: str | None = None
    max_rows: int | None = None
    request_id: str | None = None
    role: str | None = None  # the Postgres role of the caller's API key: every attempt runs as it
