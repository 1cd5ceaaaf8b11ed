"""``build_context``: everything the generation and reflection prompts need for one question.

Order matters for secrecy: the schema is filtered by the rules *first*, and only the visible schema is
sampled, matched, scored and rendered; every text that reaches the context (comments, rule text, guideline,
examples) also passes the redactor. A hidden table or column cannot reach a prompt through this stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gateway.context.cache import SchemaCache, SchemaSnapshot
from gateway.context.model import Context, estimate_tokens
from gateway.context.prune import Rendered, TableWords, neighbours, score_tables, select, table_words
from gateway.context.render import Redactor, render_rules, render_table
from gateway.context.sources import ExamplesSource, GuidelineSource
from gateway.context.values import ValueIndex, match_values
from gateway.context.words import keywords, phrases
from gateway.execute.introspect import Schema
from gateway.rules.model import RuleSet
from gateway.rules.visibility import visible_schema

if TYPE_CHECKING:
    from gateway.execute import Target
    from gateway.settings import ContextSettings


class Sources(Protocol):
    """Where the context's parts come from: the schema cache, the active guideline and verified examples.

    A :class:`~gateway.state.GatewayState` is one; the feedback store swaps its guideline and examples
    sources in place, so they are read at each call rather than captured.
    """

    schemas: SchemaCache
    guidelines: GuidelineSource
    examples: ExamplesSource


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What does not depend on the question: the visible schema, rendered once per snapshot and rules."""

    rules: RuleSet
    sample_values: int
    schema: Schema
    redact: Redactor
    values: dict[tuple[str, str], list[str]]
    rendered: list[Rendered]
    adjacency: dict[str, set[str]]
    value_index: ValueIndex
    words: dict[str, TableWords]


def _prepare(snapshot: SchemaSnapshot, rules: RuleSet, sample_values: int) -> _Prepared:
    # Kept on the snapshot, so it goes with it on refresh; a reload of the rules replaces it.
    cached = snapshot.prepared
    if cached is not None and cached.rules is rules and cached.sample_values == sample_values:
        return cached
    schema = visible_schema(snapshot.schema, rules)
    redact = Redactor(rules, snapshot.schema)
    visible = {t.qualified_name for t in schema.tables}
    values = {key: found for key, found in snapshot.values.items()
              if key[0] in visible and not rules.is_hidden_column(key[0], key[1])}
    rendered = []
    for table in schema.tables:
        full = render_table(table, values, sample_values, redact)
        compact = render_table(table, values, sample_values, redact, compact=True)
        # +1: the blank line between tables, so the joined text stays within the budget too
        rendered.append(Rendered(table.qualified_name, full, compact, estimate_tokens(full) + 1,
                                 estimate_tokens(compact) + 1))
    prepared = _Prepared(rules, sample_values, schema, redact, values, rendered, neighbours(schema.tables),
                         ValueIndex.of(values), table_words(schema.tables, values, rules.table_descriptions))
    snapshot.prepared = prepared
    return prepared


async def build_context(sources: Sources, settings: ContextSettings, target: Target, rules: RuleSet,
                        question: str, evidence: str | None) -> Context:
    """The context for ``question`` on ``target`` under ``rules``; DatabaseUnavailable when it cannot."""
    database = target.name
    snapshot = await sources.schemas.get(target, rules)
    prepared = _prepare(snapshot, rules, settings.sample_values)
    redact, rendered = prepared.redact, prepared.rendered

    text = question if not evidence else f"{question}\n{evidence}"
    hints = await match_values(target, snapshot.trgm_schema, phrases(text), prepared.value_index,
                               settings.value_match_threshold, settings.max_value_hints)

    scores = score_tables(prepared.words, keywords(text), {h.table for h in hints})
    chosen = select(rendered, scores, prepared.adjacency, settings.token_budget)
    by_name = {r.name: r for r in rendered}
    kept = [name for name, _ in chosen]
    schema_text = "\n\n".join(by_name[n].compact if compact else by_name[n].full for n, compact in chosen)
    rules_text = render_rules(rules, kept, redact)

    guideline = await sources.guidelines.active(database)
    guideline = type(guideline)(guideline.version, redact.clean(guideline.text))
    examples = await sources.examples.similar(database, question, settings.examples) if settings.examples else []
    # A verified example that names a hidden object (from before it was hidden) must not reach the prompt.
    examples = [e for e in examples if not redact.mentions_hidden(f"{e.question}\n{e.sql}")]
    hints = [h for h in hints if h.table in kept]
    parts = [schema_text, rules_text, guideline.text, *(f"{e.question}\n{e.sql}" for e in examples),
             *(h.as_text() for h in hints), question, evidence or ""]
    return Context(
        database=database,
        question=question,
        evidence=evidence,
        schema_text=schema_text,
        rules_text=rules_text,
        guideline=guideline,
        examples=examples,
        value_hints=hints,
        tables=kept,
        token_estimate=sum(estimate_tokens(p) for p in parts),
    )
