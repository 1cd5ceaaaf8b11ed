"""``check_rules``: rule files against the live schema, for ``nl2sql-gateway rules check``.

Besides the file's own shape (unknown keys, bad types, YAML errors), every table and column a rule names
must exist in the database (the catalogs list every table and column, also those the gateway's role may not
read, as a hidden column should be); a typo would otherwise hide nothing or describe nothing, silently.
"""

from __future__ import annotations

from pathlib import Path

from gateway.execute.introspect import Schema, TableInfo
from gateway.rules.conditions import predicate_columns
from gateway.rules.loading import (
    ParsedFile,
    RuleProblem,
    databases_with_rules,
    load_ruleset,
    parse_file,
    rule_files,
)
from gateway.rules.row_filters import parse_row_filter


def check_rules(rules_dir: Path, schemas: dict[str, Schema]) -> list[RuleProblem]:
    """Every problem in the rule files of the databases in ``schemas`` (and files for unknown databases)."""
    rules_dir = Path(rules_dir)
    problems: list[RuleProblem] = []
    for database in databases_with_rules(rules_dir):
        if database not in schemas:
            for path in rule_files(rules_dir, database):
                problems.append(RuleProblem(str(path), 0, f"no configured database named {database!r} "
                                            "(or it was not checked); these rules apply to nothing",
                                            severity="warning"))
    for database, schema in sorted(schemas.items()):
        files = rule_files(rules_dir, database)
        _, found = load_ruleset(database, files)
        problems += found
        for path in files:
            parsed, _ = parse_file(path)
            if parsed is not None:
                problems += _against_schema(parsed, schema)
    return problems


def _against_schema(pf: ParsedFile, schema: Schema) -> list[RuleProblem]:
    out: list[RuleProblem] = []
    where = str(pf.path)
    db = schema.database
    for table, rule in pf.model.tables.items():
        info = schema.table(table)
        if info is None:
            out.append(RuleProblem(where, pf.line("tables", table),
                                   f"unknown table {table!r} in database {db!r}{_suggest(table, schema)}"))
            continue
        known = {c.name.lower() for c in info.columns}
        if rule.row_filter is not None:
            try:
                columns = parse_row_filter(table, rule.row_filter).columns
            except ValueError:
                columns = frozenset()  # reported by parse_file
            for column in sorted(c for c in columns if c.lower() not in known):
                out.append(RuleProblem(where, pf.line("tables", table, "row_filter"),
                                       f"row filter of {table}: unknown column {info.name}.{column}"
                                       f"{_suggest_column(column, info)}"))
        for column in rule.columns:
            if column.lower() not in known:
                out.append(RuleProblem(where, pf.line("tables", table, "columns", column),
                                       f"unknown column {table}.{column} in database {db!r}"
                                       f"{_suggest_column(column, info)}"))
    for i, cond in enumerate(pf.model.required_conditions):
        info = schema.table(cond.applies_to)
        if info is None:
            out.append(RuleProblem(where, pf.line("required_conditions", i, "applies_to"),
                                   f"required condition {cond.name!r}: unknown table {cond.applies_to!r} "
                                   f"in database {db!r}"))
            continue
        known = {c.name.lower() for c in info.columns}
        for column in sorted(predicate_columns(cond.sql) - known):
            out.append(RuleProblem(where, pf.line("required_conditions", i, "sql"),
                                   f"required condition {cond.name!r}: unknown column {info.name}.{column}"))
    return out


def _suggest(name: str, schema: Schema) -> str:
    import difflib

    close = difflib.get_close_matches(name.lower(), [t.name for t in schema.tables], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _suggest_column(name: str, table: TableInfo) -> str:
    import difflib

    close = difflib.get_close_matches(name.lower(), [c.name for c in table.columns], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
