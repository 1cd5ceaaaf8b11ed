"""What an adapter may show of a database's context: schema search, the rules summary, the active guideline.

Search finds the tables, columns and stored values of a database that match a few words.

Secrecy works as in :mod:`gateway.context.build`, on the same prepared snapshot: only the visible schema
(rules applied first) and the sampled values of visible columns are searched, and comments are matched and
returned after the redactor removed any mention of a hidden name. A hidden table, column or value cannot be
matched or returned, so a search for ``salary`` finds nothing that a client may not see.

Each function takes the caller's Postgres ``role`` and row-policy ``claims`` and works on the caller's view
(gateway.context.scope), exactly as its questions' prompts do: what the role may not read, and values its
row policy filters out, are neither searched nor shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The question-independent preparation of build_context: one place decides what is visible.
from gateway.context.build import _prepare
from gateway.context.render import render_rules
from gateway.context.values import match_values
from gateway.context.words import keywords, phrases, words

if TYPE_CHECKING:
    from gateway.context.cache import SchemaCache
    from gateway.context.sources import GuidelineSource
    from gateway.execute import Target
    from gateway.rules import RuleSet
    from gateway.settings import ContextSettings


Claims = tuple[tuple[str, str], ...]


async def rules_summary(schemas: SchemaCache, settings: ContextSettings, target: Target, rules: RuleSet, *,
                        role: str | None = None, claims: Claims = ()) -> str:
    """The DBA's notes, instructions and required conditions for every visible table, as the LLM reads them
    (hidden names redacted)."""
    prepared = _prepare(await schemas.view(target, rules, role, claims), rules, settings.sample_values)
    return render_rules(prepared.rules, [t.qualified_name for t in prepared.schema.tables], prepared.redact)


async def active_guideline(schemas: SchemaCache, settings: ContextSettings, target: Target, rules: RuleSet,
                           guidelines: GuidelineSource, *, role: str | None = None,
                           claims: Claims = ()) -> dict[str, Any]:
    """``{"version", "text"}`` of the guideline questions on ``target`` use now, as the caller's prompts show
    it (hidden names redacted, reminders over what the caller cannot read left out)."""
    prepared = _prepare(await schemas.view(target, rules, role, claims), rules, settings.sample_values)
    guideline = prepared.guideline_for(await guidelines.active(target.name))
    return {"database": target.name, "version": guideline.version, "text": guideline.text}


async def search_schema(schemas: SchemaCache, settings: ContextSettings, target: Target, rules: RuleSet,
                        query: str, *, limit: int = 20, role: str | None = None,
                        claims: Claims = ()) -> dict[str, Any]:
    """``{"tables": [...], "columns": [...], "values": [...]}`` matching the words of ``query``.

    Tables and columns match when a word is part of their name or their (redacted) comment; values match
    stored values of low-cardinality text columns as the question pipeline's value hints do (pg_trgm when
    installed, else difflib). Each list holds at most ``limit`` entries.
    """
    snapshot = await schemas.view(target, rules, role, claims)
    prepared = _prepare(snapshot, rules, settings.sample_values)
    wanted = sorted(keywords(query))  # lower case, plural endings off, no stop words
    clean = prepared.redact.clean

    def hit(*texts: str | None) -> bool:
        lowered = " ".join(t.lower() for t in texts if t)
        return any(w in lowered for w in wanted)

    tables: list[dict[str, Any]] = []
    columns: list[dict[str, Any]] = []
    for table in prepared.schema.tables:
        comment = clean(table.comment or "") or None
        description = clean(rules.table_descriptions.get(table.name, "") or "") or None
        if hit(table.name, comment, description):
            tables.append({"table": table.qualified_name, "kind": table.kind, "comment": comment,
                           "description": description})
        for column in table.columns:
            column_comment = clean(column.comment or "") or None
            if hit(column.name, column_comment):
                columns.append({"table": table.qualified_name, "column": column.name, "type": column.type,
                                "comment": column_comment})
    candidates = list(dict.fromkeys([*phrases(query), *(w for w in words(query) if len(w) > 2)]))
    hints = await match_values(target, snapshot.trgm_schema, candidates, prepared.value_index,
                               settings.value_match_threshold, limit)
    values = [{"table": h.table, "column": h.column, "value": h.value, "matched": h.phrase, "score": h.score}
              for h in hints]
    return {"database": target.name, "tables": tables[:limit], "columns": columns[:limit],
            "values": values}
