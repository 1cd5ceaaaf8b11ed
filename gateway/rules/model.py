"""What a DBA's rule file says, and the per-database :class:`RuleSet` the gateway uses.

A rule file (``rules/<database>.yaml``, or several files in ``rules/<database>/`` that are merged) looks like::

    tables:
      orders:
        description: One row per customer order.
        columns:
          status: "Fulfilment status; 'cancelled' orders were never charged."
          internal_note: {hidden: true}
      salaries: {hidden: true}
      invoices:
        row_filter: "tenant_id = {claim.tenant_id}"
    instructions:
      - Revenue means orders.total_amount of orders that were not cancelled.
    extra_functions: [my_pure_fn]
    limits: {max_rows: 500}
    required_conditions:
      - name: exclude_cancelled
        applies_to: orders
        sql: "status <> 'cancelled'"
        message: queries on orders must exclude cancelled orders
    result_checks:
      - {name: no_negative_revenue, column: revenue, min: 0, message: revenue cannot be negative}

The file models reject unknown keys (``extra='forbid'``) so that a typo is an error, not a silent no-op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.rules.row_filters import RowFilter


class ColumnRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(default="", description="What the column means; shown to the LLM.")
    hidden: bool | None = Field(default=None, description="Never shown to the LLM and blocked by the safety "
                                "check. `false` un-hides a column hidden before without a restart.")


class TableRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(default="", description="What the table holds; shown to the LLM.")
    hidden: bool | None = Field(default=None, description="Never shown to the LLM and blocked by the safety "
                                "check. `false` un-hides a table hidden before without a restart.")
    columns: dict[str, ColumnRule] = Field(default_factory=dict)
    row_filter: str | Literal[False] | None = Field(
        default=None, description="Rows a caller may read, as a boolean SQL expression over the table's columns "
        "with {claim.NAME} placeholders, e.g. \"tenant_id = {claim.tenant_id}\" (gateway.rules.row_filters). "
        "Like a hidden name, a filter stays in force when its line disappears; `false` removes it.")

    @field_validator("row_filter")
    @classmethod
    def _filter_not_blank(cls, value: str | bool | None) -> str | bool | None:
        if isinstance(value, str) and not value.strip():
            raise ValueError("a row_filter must not be empty (write `false` to remove a filter)")
        return value

    @field_validator("columns", mode="before")
    @classmethod
    def _bare_string_is_description(cls, value: object) -> object:
        # `status: "what it means"` is short for `status: {description: "what it means"}`.
        if isinstance(value, dict):
            return {k: {"description": v} if isinstance(v, str) else v for k, v in value.items()}
        return value


class RuleLimits(BaseModel):
    """Limits that a rule file may tighten (never loosen) for its database."""

    model_config = ConfigDict(extra="forbid")

    max_rows: int | None = Field(default=None, ge=1, description="Most rows an answer returns.")
    max_joins: int | None = Field(default=None, ge=0, description="Most joins in one statement.")
    max_subquery_depth: int | None = Field(default=None, ge=0, description="Deepest subquery nesting.")


class RequiredConditionModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_\-]*$")
    applies_to: str = Field(min_length=1, description="Table whose every read must be filtered.")
    sql: str = Field(min_length=1, description="The predicate, in the table's own column names.")
    message: str = Field(default="", description="Told to the LLM when the condition is missing.")


class ResultCheckModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_\-]*$")
    column: str = Field(min_length=1, description="Result column (by name) the check applies to, if present.")
    min: float | None = None
    max: float | None = None
    not_null: bool = False
    message: str = ""


class RuleFileModel(BaseModel):
    """One YAML rule file."""

    model_config = ConfigDict(extra="forbid")

    tables: dict[str, TableRule] = Field(default_factory=dict)
    instructions: list[str] = Field(default_factory=list)
    extra_functions: list[str] = Field(default_factory=list)
    limits: RuleLimits = Field(default_factory=RuleLimits)
    required_conditions: list[RequiredConditionModel] = Field(default_factory=list)
    result_checks: list[ResultCheckModel] = Field(default_factory=list)

    @field_validator("tables", mode="before")
    @classmethod
    def _bare_string_is_table_description(cls, value: object) -> object:
        if isinstance(value, dict):
            return {k: {"description": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("instructions")
    @classmethod
    def _no_blank_instructions(cls, value: list[str]) -> list[str]:
        if any(not item.strip() for item in value):
            raise ValueError("instructions must not be blank")
        return value


@dataclass(frozen=True, slots=True)
class RequiredCondition:
    """A predicate every read of ``applies_to`` must be filtered by (see :mod:`gateway.rules.conditions`)."""

    name: str
    applies_to: str
    sql: str
    message: str
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class ResultCheck:
    """A bound on a named result column, checked on the rows an attempt returned."""

    name: str
    column: str
    min: float | None = None
    max: float | None = None
    not_null: bool = False
    message: str = ""


@dataclass(frozen=True, slots=True)
class RuleLimitsSet:
    max_rows: int | None = None
    max_joins: int | None = None
    max_subquery_depth: int | None = None


@dataclass(frozen=True)
class RuleSet:
    """Everything the rules say about one database. An empty RuleSet means "no rule file"."""

    database: str
    sources: tuple[Path, ...] = ()
    table_descriptions: dict[str, str] = field(default_factory=dict)
    column_descriptions: dict[str, str] = field(default_factory=dict)  # 'table.column'
    instructions: list[str] = field(default_factory=list)
    hidden_tables: frozenset[str] = frozenset()
    hidden_columns: frozenset[str] = frozenset()  # 'table.column', lower case
    # Written `hidden: false`: the only way a reload un-hides what was hidden (see gateway.rules.registry).
    shown_tables: frozenset[str] = frozenset()
    shown_columns: frozenset[str] = frozenset()
    extra_functions: frozenset[str] = frozenset()
    limits: RuleLimitsSet = field(default_factory=RuleLimitsSet)
    required_conditions: list[RequiredCondition] = field(default_factory=list)
    result_checks: list[ResultCheck] = field(default_factory=list)
    # 'table' or 'schema.table' (lower case) -> its filter: "the gateway decides" (gateway.rules.row_filters)
    row_filters: dict[str, RowFilter] = field(default_factory=dict)
    # Written `row_filter: false`: the only way a reload lifts a filter (gateway.rules.registry).
    unfiltered_tables: frozenset[str] = frozenset()

    def is_hidden_table(self, table: str) -> bool:
        name = table.lower()
        return name in self.hidden_tables or name.rsplit(".", 1)[-1] in self.hidden_tables

    def is_hidden_column(self, table: str, column: str) -> bool:
        if not self.hidden_columns and not self.hidden_tables:  # the common case, asked per column
            return False
        bare = table.lower().rsplit(".", 1)[-1]
        col = column.lower()
        return (self.is_hidden_table(table) or f"{bare}.{col}" in self.hidden_columns
                or f"{table.lower()}.{col}" in self.hidden_columns)
