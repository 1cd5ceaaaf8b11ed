"""Per-database safety policy: allowlist additions, hidden objects and complexity limits.

The policy is plain data so that it can live in the settings file (``[databases.NAME.safety]``), be
extended by a database's rules (hidden tables and columns, extra functions) and be hashed for caching.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Policy(BaseModel):
    """What the safety check allows on one database, beyond the built-in deny-by-default rules."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    extra_functions: frozenset[str] = Field(
        default=frozenset(),
        description="Function names (lower case, optionally schema-qualified) allowed on top of the built-in "
        "side-effect-free allowlist, e.g. a DBA's own pure SQL functions.",
    )
    allowed_catalogs: frozenset[str] = Field(
        default=frozenset(),
        description="System catalogs queries may read on top of the built-in allowlist of catalogs that describe "
        "the schema (gateway/safety/catalogs.py), e.g. 'pg_stat_user_tables', 'pg_catalog.pg_stat_activity' or "
        "'information_schema.columns'; a name listed here is allowed even while the policy hides objects.",
    )
    hidden_tables: frozenset[str] = Field(
        default=frozenset(),
        description="Tables no query may read ('table' or 'schema.table', lower case).",
    )
    hidden_columns: frozenset[str] = Field(
        default=frozenset(),
        description="Columns no query may read, as 'table.column' (lower case).",
    )
    max_joins: int = Field(default=12, ge=0, description="Most joins allowed in one statement.")
    max_subquery_depth: int = Field(default=6, ge=0, description="Deepest nesting of subqueries allowed.")
    max_ast_nodes: int = Field(default=4000, ge=10, description="Largest syntax tree allowed (node count).")
    allow_cartesian: bool = Field(
        default=False, description="Allow a join or FROM list of several tables without any join predicate."
    )
    allow_recursive: bool = Field(
        default=True,
        description="Allow WITH RECURSIVE; a recursive CTE must still bound its recursion "
        "(a WHERE in the recursive term or a LIMIT).",
    )
    max_generate_series: int = Field(
        default=1_000_000, ge=1, description="Largest row count a generate_series call may produce, and the "
        "largest product of the row counts of set-returning functions (unnest, string_to_table, "
        "jsonb_array_elements ...) joined in one FROM, or of the iterations of a counted recursive CTE."
    )
    max_value_bytes: int = Field(
        default=100_000, ge=1,
        description="Largest value (bytes of text, elements of an array, digits of a number) the static size "
        "analysis lets a query build: every function and operator has a declared output-size rule, and a "
        "value whose bound is above this (or unknown: a count that is not a constant nor capped with "
        "LEAST(expr, N)) is refused.",
    )
    max_aggregated_value_bytes: int = Field(
        default=512, ge=1,
        description="Largest constant part of an aggregate's argument (string_agg, array_agg, json_agg ...) over "
        "table rows, where every row adds one such value.",
    )
    assumed_value_bytes: int = Field(
        default=1_000, ge=1,
        description="The size the static analysis assumes for one stored value (a column of one row) when it "
        "bounds what a query builds from it: repeat(name, 100) counts as 100 times this.",
    )
    allow_dynamic_regex: bool = Field(
        default=False,
        description="Allow regular expression patterns that are not constants (a column, a subquery); they "
        "cannot be checked for backreferences.",
    )

    def merged(self, **additions: frozenset[str]) -> Policy:
        """A copy with set-valued fields extended (used when rules add hidden objects or functions)."""
        update = {name: getattr(self, name) | frozenset(values) for name, values in additions.items()}
        return self.model_copy(update=update)
