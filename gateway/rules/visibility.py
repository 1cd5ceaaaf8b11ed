"""The schema as the rules let it be seen: hidden tables and columns removed, keys that name them too."""

from __future__ import annotations

from dataclasses import replace

from gateway.execute.introspect import ForeignKey, Schema, TableInfo
from gateway.rules.model import RuleSet


def visible_schema(schema: Schema, rules: RuleSet) -> Schema:
    """A copy of ``schema`` without what ``rules`` hide (the introspected object is left untouched)."""
    if not rules.hidden_tables and not rules.hidden_columns:
        return schema
    tables = [_visible_table(t, rules) for t in schema.tables if not _hidden_table(t, rules)]
    return Schema(schema.database, tables)


def _hidden_table(table: TableInfo, rules: RuleSet) -> bool:
    return rules.is_hidden_table(table.name) or rules.is_hidden_table(f"{table.schema}.{table.name}")


def _visible_table(table: TableInfo, rules: RuleSet) -> TableInfo:
    def hidden(column: str) -> bool:
        return rules.is_hidden_column(table.name, column) or rules.is_hidden_column(
            f"{table.schema}.{table.name}", column)

    fks = [
        ForeignKey(list(fk.columns), fk.ref_table, list(fk.ref_columns)) for fk in table.foreign_keys
        if not any(hidden(c) for c in fk.columns) and not rules.is_hidden_table(fk.ref_table)
        and not any(rules.is_hidden_column(fk.ref_table, c) for c in fk.ref_columns)
    ]
    return replace(
        table,
        columns=[replace(c) for c in table.columns if not hidden(c.name)],
        primary_key=[c for c in table.primary_key if not hidden(c)],
        foreign_keys=fks,
    )
