"""Turning stored corrections into the cases the agents work on: schema text and the correct SQL's result."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.execute import QueryResult
from gateway.execute.introspect import Schema, introspect
from gateway.magic.agents import Case
from gateway.magic.cycle import execute_checked
from gateway.pipeline.ports import Asking
from gateway.safety import Policy
from gateway.store.corrections import StoredCorrection


def describe_schema(schema: Schema, policy: Policy) -> str:
    """One line per table: ``name(column type, ...)`` with keys; hidden tables and columns left out."""
    hidden_tables = {t.lower() for t in policy.hidden_tables}
    hidden_columns = {c.lower() for c in policy.hidden_columns}
    lines = []
    for table in schema.tables:
        if {table.name.lower(), table.qualified_name.lower()} & hidden_tables:
            continue
        columns = [
            f"{c.name} {c.type}" for c in table.columns
            if f"{table.name}.{c.name}".lower() not in hidden_columns
            and f"{table.qualified_name}.{c.name}".lower() not in hidden_columns
        ]
        keys = []
        if table.primary_key:
            keys.append("primary key (" + ", ".join(table.primary_key) + ")")
        keys += [f"({', '.join(fk.columns)}) references {fk.ref_table}({', '.join(fk.ref_columns)})"
                 for fk in table.foreign_keys]
        comment = f"  -- {table.comment}" if table.comment else ""
        lines.append(f"{table.qualified_name}({', '.join(columns)})" + ("; " + "; ".join(keys) if keys else "")
                     + comment)
    return "\n".join(lines)


@dataclass
class CaseBuilder:
    """Builds cases, introspecting each database once per run."""

    state: Asking
    _schemas: dict[str, str] | None = None

    async def schema_text(self, database: str) -> str:
        if self._schemas is None:
            self._schemas = {}
        if database not in self._schemas:
            schema = await introspect(self.state.target(database))
            self._schemas[database] = describe_schema(schema, self.state.policy(database))
        return self._schemas[database]

    async def build(self, correction: StoredCorrection) -> tuple[Case, QueryResult] | str:
        """The case and the correct SQL's result, or why the correction cannot be used any more."""
        if self.state.targets.get(correction.database) is None:
            return f"database {correction.database!r} is no longer configured"
        gold = await execute_checked(self.state, correction.database, correction.corrected_sql)
        if gold.result is None:
            return f"the corrected SQL no longer runs: {gold.problem}"
        case = Case(
            correction_id=correction.id, database=correction.database, question=correction.question,
            evidence=correction.evidence, schema=await self.schema_text(correction.database),
            incorrect_sql=correction.incorrect_sql, correct_sql=correction.corrected_sql,
        )
        return case, gold.result
