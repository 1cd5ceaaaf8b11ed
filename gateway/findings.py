"""Findings: the one type for what the gateway notices about a SQL text or an attempt, and the one registry
of their codes.

A :class:`Finding` comes from the safety check (``function_blocked`` ...), from the outcome of an attempt
(``exec_error``, ``blocked`` ...), from validating a result (``empty_result`` ...) or from a DBA's rules
(``rule_violation``). Every code it may carry is registered in :data:`CODES`, once, with its family, a
one-line meaning and how reflection treats it; documentation (tests/test_docs.py), settings validation
(``ask.reflect_on``) and the reflection trigger read this table. Add a code here before anything emits it.

This module imports nothing of the gateway and does no I/O: the safety check builds on it.

>>> CODES["empty_result"].family, CODES["exec_error"].always_reflects, CODES["hidden_column"].reflectable
('validation', True, False)
>>> Finding("rule_violation", "orders must exclude cancelled", detail={"rule": "exclude_cancelled"}).as_dict()
{'code': 'rule_violation', 'message': 'orders must exclude cancelled', 'rule': 'exclude_cancelled'}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Family = Literal["safety", "outcome", "validation", "rules"]


@dataclass(frozen=True, slots=True)
class Code:
    """One registered finding code.

    ``family``: ``safety`` (the static check; these arrive in an answer inside a ``blocked`` finding),
    ``outcome`` (an attempt that gave no usable result), ``validation`` (a result that looks wrong) or
    ``rules`` (a DBA rule broken). ``always_reflects``: a reflection follows whatever the policy says.
    ``reflectable``: may be listed in a database's ``ask.reflect_on``. ``advisory``: a guess from the
    question's wording, not something the SQL and result show; it is shown in the answer and the trace but
    leaves the status ``ok`` and triggers no reflection unless the database's ``ask.reflect_on`` lists it.
    """

    name: str
    family: Family
    meaning: str
    always_reflects: bool = False
    reflectable: bool = False
    advisory: bool = False


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the gateway noticed, with a stable registered ``code``.

    ``message`` names the offending clause, function, rule or result; ``clause`` is the SQL fragment or name
    at fault and ``position`` a 0-based character offset into the checked text, when known (the safety check
    sets them). ``detail`` carries the other fields a reader keys on (``sqlstate``, ``hint`` and Postgres's
    1-based ``position`` for ``exec_error``, ``codes`` for ``blocked``, ``rule`` for ``rule_violation`` ...),
    so that prompts, logs and clients read the same data.
    """

    code: str
    message: str
    clause: str | None = None
    position: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def as_dict(self) -> dict[str, Any]:
        """The wire form: ``code``, ``message``, then ``clause`` and ``position`` (always for a safety finding,
        otherwise when set), then the ``detail`` fields."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.clause is not None or self.position is not None or family_of(self.code) == "safety":
            out["clause"] = self.clause
            out["position"] = self.position
        out.update(self.detail)
        return out


def _register(*codes: Code) -> dict[str, Code]:
    table: dict[str, Code] = {}
    for code in codes:
        assert code.name not in table, f"finding code {code.name} registered twice"
        table[code.name] = code
    return table


def _safety(name: str, meaning: str) -> Code:
    return Code(name, "safety", meaning)


CODES: dict[str, Code] = _register(
    # --- safety: the static check refuses the statement (gateway.safety) -------------------------------
    _safety("parse_error", "The text does not parse as PostgreSQL (pglast) or sqlglot cannot read all of it."),
    _safety("multiple_statements", "More than one statement (or none) in the text; exactly one is allowed."),
    _safety("statement_not_allowed", "A statement that is not a query: session, transaction, COPY, DO, CALL, "
            "PREPARE/EXECUTE, LISTEN/NOTIFY, maintenance (VACUUM, ANALYZE, ...) and the like."),
    _safety("write_statement", "A statement that writes data or schema: INSERT, UPDATE, DELETE, MERGE, "
            "TRUNCATE, DDL."),
    _safety("data_modifying_cte", "A WITH clause whose CTE body is INSERT, UPDATE, DELETE or MERGE."),
    _safety("select_into", "SELECT ... INTO, which creates a table."),
    _safety("locking_clause", "FOR UPDATE / FOR NO KEY UPDATE / FOR SHARE / FOR KEY SHARE row locks."),
    _safety("explain_analyze", "EXPLAIN ANALYZE, which executes the statement."),
    _safety("function_not_allowed", "A function that is not on the side-effect-free allowlist (nor in "
            "extra_functions)."),
    _safety("function_blocked", "A function known to be dangerous; the message names the reason (sleep, "
            "file_access, large_object, dblink, config_access, advisory_lock, sequence, backend_signal, "
            "sql_in_text, notify, stats_reset, replication)."),
    _safety("catalog_not_allowed", "A system catalog (pg_catalog, information_schema, pg_* schemas, any pg_* "
            "relation) that is not on the allowlist of catalogs describing the schema, nor in allowed_catalogs; "
            "catalogs listing tables and columns are refused while the policy hides anything."),
    _safety("hidden_table", "A table the database's policy hides."),
    _safety("hidden_column", "A column the policy hides, read anywhere (output, predicate, join, grouping, "
            "ordering, window, function argument, cast), also through *, t.*, a whole-row reference, a "
            "column-alias list, a join alias, (x).f, USING or NATURAL, or a reference the lineage pass cannot "
            "bind."),
    _safety("too_many_joins", "More joins than the policy's max_joins."),
    _safety("subquery_too_deep", "Subqueries nested deeper than the policy's max_subquery_depth."),
    _safety("too_complex", "A syntax tree larger than the policy's max_ast_nodes (or too deep to walk)."),
    _safety("cartesian_product", "Several relations in one FROM without a predicate linking them (a constant "
            "ON, one touching one side only, or only `<>` links nothing)."),
    _safety("unbounded_recursion", "A recursive CTE without a WHERE, join predicate or CYCLE in its recursive "
            "term, and no LIMIT outside."),
    _safety("recursion_not_allowed", "WITH RECURSIVE while the policy sets allow_recursive to false."),
    _safety("generate_series_too_large", "generate_series with literal bounds producing more rows than "
            "max_generate_series, or an infinite bound."),
    _safety("value_too_large", "A value whose size bound (from the declared size rules of every function and "
            "operator) is above max_value_bytes, holds more than 32 copies of the data of the tables read, or is "
            "unknown: a count into an amplifier (repeat, lpad, array_fill, ^, factorial ...) that is not a "
            "constant nor capped with LEAST(expr, N); max_aggregated_value_bytes per row inside an aggregate."),
    _safety("rows_too_large", "Set-returning functions (unnest, string_to_table, jsonb_array_elements ...) in "
            "one SELECT whose row bounds multiply to more than max_generate_series."),
    _safety("regex_too_costly", "A regular expression with a backreference or nested bounded repetitions (in "
            "~, ~*, !~, !~*, SIMILAR TO, regexp_*, substring ... from, jsonpath like_regex)."),
    _safety("regex_not_constant", "A regular expression pattern that is not a constant, so it cannot be "
            "checked (allowed when the policy sets allow_dynamic_regex)."),
    # --- outcome: the attempt produced no answer (gateway.pipeline) --------------------------------------
    Code("exec_error", "outcome", "The database refused or failed the query; with `error` (the problem "
         "code), `sqlstate`, `position` (1-based, as Postgres reports it) and `hint`.", True, True),
    Code("blocked", "outcome", "The safety check refused the SQL, which was not run; `codes` lists the safety "
         "codes.", True, True),
    Code("no_sql", "outcome", "No SQL statement could be read from the LLM's answer.", True, True),
    Code("repeated_sql", "outcome", "A reflection returned SQL that was already tried; it was not run again "
         "and the loop stops."),
    # --- validation: the result looks wrong for the question (gateway.pipeline.validate) ---------------
    Code("empty_result", "validation", "The query returned no rows.", reflectable=True),
    Code("empty_aggregate", "validation", "An aggregate over a filter (no GROUP BY) whose every aggregate came "
         "back 0 or NULL: the filter probably matched no rows.", reflectable=True),
    Code("null_heavy", "validation", "A column from the optional side of an outer join is entirely NULL: the "
         "join matched no rows.", reflectable=True),
    Code("count_mismatch", "validation", "A \"how many\" question (not a ranking by a number) answered with "
         "many rows by SQL that counts nothing (no aggregate, no GROUP BY).", reflectable=True),
    Code("grouping_mismatch", "validation", "A \"per / each / by\" question answered with a single row by SQL "
         "that aggregates without GROUP BY. Advisory: a guess from the wording.", reflectable=True, advisory=True),
    Code("duplicate_rows", "validation", "The question asks for distinct values and rows repeat an earlier row "
         "exactly.", reflectable=True),
    Code("truncated", "validation", "The result was cut at the row limit.", reflectable=True),
    Code("llm_judge", "validation", "The LLM judge (`ask.llm_judge`) says the result does not answer the "
         "question.", reflectable=True),
    # --- rules: a DBA rule is broken (gateway.rules) ----------------------------------------------------
    # The rewrite for row filters (gateway.row_policy) refuses, not the static check: the rules family.
    Code("row_filter_unenforceable", "rules", "The database has row filters (rules `row_filter`) and the "
         "statement reads data the gateway cannot filter: a view, materialized view, catalog or unknown "
         "relation, TABLESAMPLE or EXPLAIN over a filtered table, bind parameters, or a DBA function "
         "(extra_functions)."),
    Code("rule_violation", "rules", "A required condition is missing from the SQL or a result check failed; "
         "`rule` names the rule.", reflectable=True),
    # The semantic model's definitions (gateway.semantic.enforce): declared by the DBA like the rules.
    Code("metric_definition_mismatch", "rules", "A column named as a metric (its name, label or a synonym) is "
         "not computed as the semantic model defines it: another aggregation or measure expression, a missing "
         "or added filter, a join off the declared relationships or one that repeats rows; `metric` and "
         "`definition` say what it should be.", reflectable=True),
    Code("default_filter_missing", "rules", "A read of a table lacks a required default filter of the semantic "
         "model; `filter` names it and `sql` is the condition.", reflectable=True),
)

ALWAYS_REFLECT = frozenset(c.name for c in CODES.values() if c.always_reflects)
REFLECTABLE = frozenset(c.name for c in CODES.values() if c.reflectable)
ADVISORY = frozenset(c.name for c in CODES.values() if c.advisory)


def family_of(code: str) -> Family | None:
    """The family of a registered code; None for an unregistered one."""
    known = CODES.get(code)
    return known.family if known is not None else None


def codes_of(family: Family) -> dict[str, str]:
    """The codes of one family with their meanings, in registration order."""
    return {c.name: c.meaning for c in CODES.values() if c.family == family}
