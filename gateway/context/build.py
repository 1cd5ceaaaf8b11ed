"""``build_context``: everything the generation and reflection prompts need for one question.

Order matters for secrecy: the schema is filtered by the rules *first*, and only the visible schema is
sampled, matched, scored and rendered; every text that reaches the context (comments, rule text, guideline,
examples) also passes the redactor. A hidden table or column cannot reach a prompt through this stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.context.model import Context, estimate_tokens
from gateway.context.prune import Rendered, neighbours, score_tables, select
from gateway.context.render import Redactor, render_rules, render_table
from gateway.context.values import match_values
from gateway.context.words import keywords, phrases
from gateway.rules.visibility import visible_schema

if TYPE_CHECKING:
    from gateway.state import GatewayState


async def build_context(state: GatewayState, database: str, question: str, evidence: str | None) -> Context:
    """The context for ``question`` on ``database``; UnknownDatabase / DatabaseUnavailable when it cannot."""
    settings = state.settings.context
    target = state.target(database)
    rules = state.ruleset(database)
    snapshot = await state.schemas.get(target, rules)
    schema = visible_schema(snapshot.schema, rules)
    redact = Redactor(rules, snapshot.schema)
    visible = {t.qualified_name for t in schema.tables}
    values = {key: found for key, found in snapshot.values.items()
              if key[0] in visible and not rules.is_hidden_column(key[0], key[1])}

    text = question if not evidence else f"{question}\n{evidence}"
    hints = await match_values(target, snapshot.trgm_schema, phrases(text), values,
                               settings.value_match_threshold, settings.max_value_hints)

    rendered = []
    for table in schema.tables:
        full = render_table(table, values, settings.sample_values, redact)
        compact = render_table(table, values, settings.sample_values, redact, compact=True)
        # +1: the blank line between tables, so the joined text stays within the budget too
        rendered.append(Rendered(table.qualified_name, full, compact, estimate_tokens(full) + 1,
                                 estimate_tokens(compact) + 1))
    scores = score_tables(schema.tables, keywords(text), values, rules.table_descriptions,
                          {h.table for h in hints})
    chosen = select(rendered, scores, neighbours(schema.tables), settings.token_budget)
    by_name = {r.name: r for r in rendered}
    kept = [name for name, _ in chosen]
    schema_text = "\n\n".join(by_name[n].compact if compact else by_name[n].full for n, compact in chosen)
    rules_text = render_rules(rules, kept, redact)

    guideline = await state.guidelines.active(database)
    guideline = type(guideline)(guideline.version, redact.clean(guideline.text))
    examples = await state.examples.similar(database, question, settings.examples) if settings.examples else []
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
