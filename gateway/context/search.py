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
from gateway.context.build import prepare
from gateway.context.render import render_rules
from gateway.context.values import match_values
from gateway.context.words import identifiers, keywords, phrases, terms, words
from gateway.execute.introspect import TableInfo

if TYPE_CHECKING:
    from gateway.context.cache import SchemaCache
    from gateway.context.sources import GuidelineSource
    from gateway.execute import Target
    from gateway.rules import RuleSet
    from gateway.settings import ContextSettings


Claims = tuple[tuple[str, str], ...]
Detail = str  # "auto" | "tables" | "full"

# ``detail="auto"``: a page of at most this many tables is shown in full, a larger one as a list of tables.
AUTO_FULL_MAX = 50


async def describe_schema(schemas: SchemaCache, settings: ContextSettings, target: Target, rules: RuleSet, *,
                          tables: list[str] | None = None, detail: Detail = "auto", limit: int = 100,
                          offset: int = 0, role: str | None = None) -> dict[str, Any]:
    """One page of the visible schema, from the cached snapshot (never a fresh introspection per call).

    ``detail``: ``"tables"`` lists schema, name, kind, comment and estimated rows only (a client's first
    look at a large database), ``"full"`` adds columns, keys and foreign keys, ``"auto"`` is full for a page
    of at most ``AUTO_FULL_MAX`` tables. ``tables``: only these (name or schema.name, any case). The page is
    ``limit`` tables from ``offset``; ``next_offset`` is None on the last page. What the rules hide, and
    what the Postgres ``role`` may not read, is left out, as in every prompt.
    """
    view = await schemas.view(target, rules, role)
    prepared = prepare(view, rules, settings.sample_values)
    found = prepared.schema.tables
    if tables:
        wanted = {name.lower() for name in tables}
        found = [t for t in found if t.name.lower() in wanted or f"{t.schema}.{t.name}".lower() in wanted]
    page = found[offset:offset + limit]
    full = detail == "full" or (detail == "auto" and (bool(tables) or len(page) <= AUTO_FULL_MAX))
    following = offset + limit
    return {"database": target.name, "detail": "full" if full else "tables", "total": len(found),
            "offset": offset, "next_offset": following if following < len(found) else None,
            "tables": [_table_dict(t, full) for t in page]}


def _table_dict(table: TableInfo, full: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"schema": table.schema, "name": table.name, "kind": table.kind,
                           "comment": table.comment, "estimated_rows": table.estimated_rows}
    if full:
        out["columns"] = [{"name": c.name, "type": c.type, "nullable": c.nullable, "comment": c.comment}
                          for c in table.columns]
        out["primary_key"] = list(table.primary_key)
        out["foreign_keys"] = [{"columns": list(fk.columns), "ref_table": fk.ref_table,
                                "ref_columns": list(fk.ref_columns)} for fk in table.foreign_keys]
    return out


async def rules_summary(schemas: SchemaCache, settings: ContextSettings, target: Target, rules: RuleSet, *,
                        role: str | None = None, claims: Claims = ()) -> str:
    """The DBA's notes, instructions and required conditions for every visible table, as the LLM reads them
    (hidden names redacted)."""
    prepared = prepare(await schemas.view(target, rules, role, claims), rules, settings.sample_values)
    return render_rules(prepared.rules, [t.qualified_name for t in prepared.schema.tables], prepared.redact)


async def active_guideline(schemas: SchemaCache, settings: ContextSettings, target: Target, rules: RuleSet,
                           guidelines: GuidelineSource, *, role: str | None = None,
                           claims: Claims = ()) -> dict[str, Any]:
    """``{"version", "text"}`` of the guideline questions on ``target`` use now, as the caller's prompts show
    it (hidden names redacted, reminders over what the caller cannot read left out)."""
    prepared = prepare(await schemas.view(target, rules, role, claims), rules, settings.sample_values)
    guideline = prepared.guideline_for(await guidelines.active(target.name))
    return {"database": target.name, "version": guideline.version, "text": guideline.text}


async def search_schema(schemas: SchemaCache, settings: ContextSettings, target: Target, rules: RuleSet,
                        query: str, *, limit: int = 20, role: str | None = None,
                        claims: Claims = ()) -> dict[str, Any]:
    """``{"tables": [...], "columns": [...], "values": [...]}`` matching the words of ``query``, best first.

    Tables and columns match when a word is part of their name or their (redacted) comment; they are ranked
    by the context stage's retrieval score (gateway.context.prune.TableIndex: rare words and names count
    most), and each table carries its ``score``. Values match stored values of low-cardinality text columns
    as the question pipeline's value hints do (pg_trgm when installed, else difflib). Each list holds at most
    ``limit`` entries.
    """
    snapshot = await schemas.view(target, rules, role, claims)
    prepared = prepare(snapshot, rules, settings.sample_values)
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
    ranks = prepared.index.score(terms(query), identifiers(query), set())
    by_name = prepared.render.tables
    position = {t["table"]: i for i, t in enumerate(tables)}
    # Tables the retrieval finds though no word is part of their name or comment (a number, a column, a value)
    for name in sorted((n for n in ranks if n in by_name and n not in position), key=lambda n: -ranks[n])[:limit]:
        table = by_name[name]
        position[name] = len(tables)
        tables.append({"table": name, "kind": table.kind, "comment": clean(table.comment or "") or None,
                       "description": clean(rules.table_descriptions.get(table.name, "") or "") or None})
    for entry in tables:
        entry["score"] = round(ranks.get(entry["table"], 0.0), 3)
    tables.sort(key=lambda t: (-t["score"], position[t["table"]]))
    columns.sort(key=lambda c: -ranks.get(c["table"], 0.0))
    candidates = list(dict.fromkeys([*phrases(query), *(w for w in words(query) if len(w) > 2)]))
    hints = await match_values(target, snapshot.trgm_schema, candidates, prepared.value_index,
                               settings.value_match_threshold, limit)
    values = [{"table": h.table, "column": h.column, "value": h.value, "matched": h.phrase, "score": h.score}
              for h in hints]
    return {"database": target.name, "tables": tables[:limit], "columns": columns[:limit],
            "values": values}
