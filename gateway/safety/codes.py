"""Every finding code the safety check can emit, with a one-line description.

Codes are stable API: clients, metrics (``nl2sql_safety_blocks_total{code=...}``) and reflection prompts
key on them. Add a code here before any rule emits it; a test checks that rules only emit listed codes.
"""

from __future__ import annotations

CODES: dict[str, str] = {
    "parse_error": "The text does not parse as PostgreSQL (pglast) or sqlglot cannot read all of it.",
    "multiple_statements": "More than one statement (or none) in the text; exactly one is allowed.",
    "statement_not_allowed": "A statement that is not a query: session, transaction, COPY, DO, CALL, "
    "PREPARE/EXECUTE, LISTEN/NOTIFY, maintenance (VACUUM, ANALYZE, ...) and the like.",
    "write_statement": "A statement that writes data or schema: INSERT, UPDATE, DELETE, MERGE, "
    "TRUNCATE, DDL.",
    "data_modifying_cte": "A WITH clause whose CTE body is INSERT, UPDATE, DELETE or MERGE.",
    "select_into": "SELECT ... INTO, which creates a table.",
    "locking_clause": "FOR UPDATE / FOR NO KEY UPDATE / FOR SHARE / FOR KEY SHARE row locks.",
    "explain_analyze": "EXPLAIN ANALYZE, which executes the statement.",
    "function_not_allowed": "A function that is not on the side-effect-free allowlist (nor in "
    "extra_functions).",
    "function_blocked": "A function known to be dangerous; the message names the reason (sleep, file_access, "
    "large_object, dblink, config_access, advisory_lock, sequence, backend_signal, sql_in_text, notify, "
    "stats_reset, replication).",
    "catalog_not_allowed": "A system catalog (pg_catalog, information_schema, pg_* schemas, any pg_* relation) "
    "that is not on the allowlist of catalogs describing the schema, nor in allowed_catalogs; catalogs listing "
    "tables and columns are refused while the policy hides anything.",
    "hidden_table": "A table the database's policy hides.",
    "hidden_column": "A column the policy hides, read anywhere (output, predicate, join, grouping, ordering, "
    "window, function argument, cast), also through *, t.*, a whole-row reference, a column-alias list, a join "
    "alias, (x).f, USING or NATURAL, or a reference the lineage pass cannot bind.",
    "too_many_joins": "More joins than the policy's max_joins.",
    "subquery_too_deep": "Subqueries nested deeper than the policy's max_subquery_depth.",
    "too_complex": "A syntax tree larger than the policy's max_ast_nodes (or too deep to walk).",
    "cartesian_product": "Several relations in one FROM without a predicate linking them (a constant ON, one "
    "touching one side only, or only `<>` links nothing).",
    "unbounded_recursion": "A recursive CTE without a WHERE, join predicate or CYCLE in its recursive term, "
    "and no LIMIT outside.",
    "recursion_not_allowed": "WITH RECURSIVE while the policy sets allow_recursive to false.",
    "generate_series_too_large": "generate_series with literal bounds producing more rows than "
    "max_generate_series, or an infinite bound.",
    "value_too_large": "A size-amplifying function (repeat, lpad, rpad, array_fill, format widths, char(n) "
    "casts, nested) whose constant arguments build a value larger than max_value_bytes, or "
    "max_aggregated_value_bytes inside an aggregate.",
    "regex_too_costly": "A regular expression with a backreference or nested bounded repetitions (in ~, ~*, "
    "!~, !~*, SIMILAR TO, regexp_*, substring ... from, jsonpath like_regex).",
    "regex_not_constant": "A regular expression pattern that is not a constant, so it cannot be checked "
    "(allowed when the policy sets allow_dynamic_regex).",
}
