"""The schema and the rules as prompt text.

Tables are rendered as annotated ``CREATE TABLE`` statements, the form LLMs read best: types, NOT NULL,
keys, the database's comments and, for low-cardinality text columns, the values that occur. Every text
that reaches a prompt passes through :class:`Redactor`, so a comment or a DBA instruction that mentions a
hidden table or column does not leak its name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gateway.execute.introspect import Schema, TableInfo
from gateway.rules.model import RuleSet


class Redactor:
    """Replaces mentions of hidden tables and columns with ``[hidden]``.

    Names are matched as whole words: ``table.column`` always, a bare hidden table name always, and a bare
    hidden column name unless some visible column has the same name (then the word is not a secret).
    ``readable``: a caller's view of ``full`` (gateway.context.scope); what it lacks is hidden too.
    """

    def __init__(self, rules: RuleSet, full: Schema, readable: Schema | None = None) -> None:
        shown = None if readable is None else {t.qualified_name: {c.name for c in t.columns}
                                               for t in readable.tables}

        def table_hidden(table: TableInfo) -> bool:
            return rules.is_hidden_table(table.qualified_name) or (shown is not None
                                                                   and table.qualified_name not in shown)

        def column_hidden(table: TableInfo, column: str) -> bool:
            return rules.is_hidden_column(table.qualified_name, column) or (
                shown is not None and column not in shown.get(table.qualified_name, ()))

        if shown is None and not rules.hidden_tables and not rules.hidden_columns:
            self.pattern: re.Pattern[str] | None = None  # nothing hidden: nothing to redact (the common case)
            return
        visible_columns = {c.name.lower() for t in full.tables if not table_hidden(t)
                           for c in t.columns if not column_hidden(t, c.name)}
        names: set[str] = set()
        for table in full.tables:
            if table_hidden(table):
                names |= {table.name.lower(), table.qualified_name.lower()}
                names |= {f"{table.name}.{c.name}".lower() for c in table.columns}
                continue
            for column in table.columns:
                if column_hidden(table, column.name):
                    names.add(f"{table.name}.{column.name}".lower())
                    if column.name.lower() not in visible_columns:
                        names.add(column.name.lower())
        names |= set(rules.hidden_tables) | set(rules.hidden_columns)
        names |= {c.rsplit(".", 1)[-1] for c in rules.hidden_columns} - visible_columns
        ordered = sorted(names, key=len, reverse=True)  # 'orders.secret' before 'secret'
        self.pattern = (re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(n) for n in ordered) + r")(?![\w])",
                                   re.IGNORECASE) if ordered else None)

    def clean(self, text: str) -> str:
        return self.pattern.sub("[hidden]", text) if self.pattern and text else text

    def mentions_hidden(self, text: str) -> bool:
        return bool(self.pattern and self.pattern.search(text))


# A guideline reminder starts a line with its number ("12. Counting rows multiplied by a join").
_REMINDER = re.compile(r"^(?=\d+\.\s)", re.MULTILINE)


def scoped_guideline(text: str, redact: Redactor, *, drop: bool, reader_dependent: Redactor | None = None) -> str:
    r"""The guideline as a prompt shows it: hidden names redacted and, with ``drop`` (a caller's view), the
    numbered reminders that mention any name the caller may not read left out whole, since their SQL is a
    worked example over data it cannot see.

    >>> redact = Redactor(RuleSet("db", hidden_tables=frozenset({"salaries"})), Schema("db", []))
    >>> text = "Intro\n1. Count orders\nSELECT 1\n2. Sum salaries\nSELECT 2\n"
    >>> scoped_guideline(text, redact, drop=True)
    'Intro\n1. Count orders\nSELECT 1\n'
    >>> scoped_guideline(text, redact, drop=False)
    'Intro\n1. Count orders\nSELECT 1\n2. Sum [hidden]\nSELECT 2\n'

    ``reader_dependent`` (a caller's view with row-level security or row filters in play) names the tables
    whose rows depend on the reader: a reminder over one of them is left out too, since its literals may
    spell another tenant's rows (the guideline is learnt from every caller's corrections).
    """
    droppers = [r for r in (redact if drop else None, reader_dependent) if r is not None and r.pattern is not None]
    if droppers:
        parts = _REMINDER.split(text)
        text = "".join(p for i, p in enumerate(parts)
                       if i == 0 or not any(r.mentions_hidden(p) for r in droppers))
    return redact.clean(text)


def render_table(table: TableInfo, values: dict[tuple[str, str], list[str]], samples: int,
                 redact: Redactor, compact: bool = False) -> str:
    """One table as ``CREATE TABLE``; ``compact`` leaves out column comments and sample values."""
    head = f"-- {redact.clean(_one_line(table.comment))}" if table.comment and not compact else ""
    rows = f"about {table.estimated_rows} rows" if table.estimated_rows else ""
    kind = "" if table.kind == "table" else f"{table.kind.replace('_', ' ')}; "
    intro = f"-- {table.qualified_name}: {kind}{rows}".rstrip(": ")
    lines = [intro] + ([head] if head else []) + [f"CREATE TABLE {table.qualified_name} ("]
    body: list[tuple[str, str]] = []
    fk_of = {fk.columns[0]: fk for fk in table.foreign_keys if len(fk.columns) == 1}
    for column in table.columns:
        text = f"  {column.name} {column.type}{'' if column.nullable else ' NOT NULL'}"
        fk = fk_of.get(column.name)
        if fk is not None:
            text += f" REFERENCES {fk.ref_table}({fk.ref_columns[0]})"
        notes = []
        if column.comment and not compact:
            notes.append(redact.clean(_one_line(column.comment)))
        found = values.get((table.qualified_name, column.name))
        if found and samples and not compact:
            shown = ", ".join(_literal(v) for v in found[:samples])
            notes.append(("values: " if len(found) <= samples else "e.g. ") + shown
                         + ("" if len(found) <= samples else f" ({len(found)} distinct)"))
        body.append((text, " ".join(notes)))
    if table.primary_key:
        body.append((f"  PRIMARY KEY ({', '.join(table.primary_key)})", ""))
    for fk in table.foreign_keys:
        if len(fk.columns) > 1:
            ref = f"{fk.ref_table}({', '.join(fk.ref_columns)})"
            body.append((f"  FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {ref}", ""))
    for i, (text, note) in enumerate(body):
        comma = "," if i < len(body) - 1 else ""
        lines.append(f"{text}{comma}  -- {note}" if note else f"{text}{comma}")
    lines.append(");")
    return "\n".join(lines)


def render_rules(rules: RuleSet, tables: Iterable[str], redact: Redactor) -> str:
    """Descriptions of the kept tables and columns, the DBA's instructions and required conditions."""
    kept = {t.lower() for t in tables} | {t.lower().rsplit(".", 1)[-1] for t in tables}
    out: list[str] = []
    notes = [f"- {name}: {text}" for name, text in sorted(rules.table_descriptions.items()) if name in kept]
    notes += [f"- {name}: {text}" for name, text in sorted(rules.column_descriptions.items())
              if name.rsplit(".", 1)[0] in kept]
    if notes:
        out += ["Table and column notes from the database administrator:", *notes]
    if rules.instructions:
        out += ["Rules to follow:", *(f"- {text}" for text in rules.instructions)]
    required = [c for c in rules.required_conditions if c.applies_to in kept]
    if required:
        out += ["Required conditions (every read of the table must include them):",
                *(f"- {c.applies_to}: {c.sql} ({c.message})" for c in required)]
    return redact.clean("\n".join(out))


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _literal(value: str) -> str:
    short = value if len(value) <= 40 else value[:37] + "..."
    return "'" + short.replace("'", "''") + "'"
