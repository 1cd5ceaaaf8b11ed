"""``build_context``: everything the generation and reflection prompts need for one question.

Order matters for secrecy: the schema is filtered by the rules *first*, and only the visible schema is
sampled, matched, scored and rendered; every text that reaches the context (comments, rule text, guideline,
examples) also passes the redactor. A hidden table or column cannot reach a prompt through this stage.

Who asks matters too: a caller with a Postgres role or row-policy values gets its own view of the snapshot
(gateway.context.scope), cut to the columns its role may read, with sample values read under its row
policy. On that view the redactor also hides every name the caller cannot read, guideline reminders that
mention one are left out, and a verified example is shown only when its SQL reads nothing but readable
columns of tables whose rows do not depend on the reader (judged on the safety check's column lineage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gateway import safety
from gateway.context.cache import SchemaCache
from gateway.context.model import Context, Example, Guideline, ValueHint, estimate_tokens
from gateway.context.prune import Rendered, TableIndex, TableWords, fits, neighbours, select, table_words
from gateway.context.render import Redactor, render_rules, render_table, scoped_guideline
from gateway.context.scope import is_row_filtered, row_filtered
from gateway.context.snapshot import SchemaSnapshot
from gateway.context.sources import ExamplesSource, GuidelineSource
from gateway.context.values import ValueIndex, match_values
from gateway.context.words import identifiers, phrases, terms
from gateway.execute.introspect import Schema
from gateway.rules.model import RuleSet
from gateway.rules.visibility import visible_schema
from gateway.semantic.model import SemanticModel

if TYPE_CHECKING:
    from gateway.execute import Target
    from gateway.settings import ContextSettings


class Sources(Protocol):
    """Where the context's parts come from: the schema cache, the active guideline and verified examples.

    The gateway's resources are one (read-only: its sources are fixed when it opens).
    """

    @property
    def schemas(self) -> SchemaCache: ...

    @property
    def guidelines(self) -> GuidelineSource: ...

    @property
    def examples(self) -> ExamplesSource: ...


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What does not depend on the question: the visible schema, rendered once per snapshot and rules."""

    rules: RuleSet
    sample_values: int
    schema: Schema
    redact: Redactor
    values: dict[tuple[str, str], list[str]]
    render: Renderer
    adjacency: dict[str, set[str]]
    value_index: ValueIndex
    words: dict[str, TableWords]
    index: TableIndex
    # A caller's view only: the policy under which a verified example may be shown (what the caller cannot
    # read, and tables whose rows depend on the reader, are hidden in it), and verdicts already reached.
    examples_policy: safety.Policy | None = None
    example_verdicts: dict[str, bool] | None = None
    guideline: list[tuple[Guideline, Guideline]] | None = None  # the last guideline and its scoped text
    # A caller's view only: names the tables whose rows depend on the reader (row-level security, row
    # filters), for leaving out the guideline's reminders over them.
    reader_dependent: Redactor | None = None

    def guideline_for(self, guideline: Guideline) -> Guideline:
        """``guideline`` as this view shows it (memoized for the last one: it rarely changes)."""
        memo = self.guideline
        if memo and memo[0][0] == guideline:
            return memo[0][1]
        scoped = Guideline(guideline.version, scoped_guideline(guideline.text, self.redact,
                                                               drop=self.examples_policy is not None,
                                                               reader_dependent=self.reader_dependent))
        if memo is not None:
            memo[:] = [(guideline, scoped)]
        return scoped

    def shows(self, example: Example) -> bool:
        """Whether a verified example may be shown: it names nothing hidden and, on a caller's view, its SQL
        reads only what the caller may read (column lineage of the safety check; unparseable: no)."""
        if self.redact.mentions_hidden(f"{example.question}\n{example.sql}"):
            return False
        if self.examples_policy is None or self.example_verdicts is None:
            return True
        shown = self.example_verdicts.get(example.sql)
        if shown is None:
            verdict = safety.check(example.sql, self.examples_policy)
            shown = not any(f.code in _UNREADABLE for f in verdict.findings)
            if len(self.example_verdicts) >= EXAMPLE_VERDICTS_KEPT:
                self.example_verdicts.clear()
            self.example_verdicts[example.sql] = shown
        return shown


class Renderer:
    """Each visible table as prompt text (full and compact), rendered on first use and kept with the prepared
    snapshot: a question renders only the tables it considers, not the whole schema."""

    def __init__(self, schema: Schema, values: dict[tuple[str, str], list[str]], samples: int,
                 redact: Redactor) -> None:
        self.tables = {t.qualified_name: t for t in schema.tables}
        self.order = list(self.tables)
        self.position = {name: i for i, name in enumerate(self.order)}
        self.values, self.samples, self.redact = values, samples, redact
        self._done: dict[str, Rendered] = {}
        self._fits: dict[int, bool] = {}

    def __call__(self, name: str) -> Rendered:
        found = self._done.get(name)
        if found is None:
            table = self.tables[name]
            full = render_table(table, self.values, self.samples, self.redact)
            compact = render_table(table, self.values, self.samples, self.redact, compact=True)
            # +1: the blank line between tables, so the joined text stays within the budget too
            found = Rendered(name, full, compact, estimate_tokens(full) + 1, estimate_tokens(compact) + 1)
            self._done[name] = found
        return found

    def fits(self, budget: int) -> bool:
        """Whether the whole visible schema fits ``budget`` in full (worked out once per budget)."""
        known = self._fits.get(budget)
        if known is None:
            known = self._fits[budget] = fits(self.order, self, budget)
        return known


# Findings that mean an example's SQL reads what the caller may not (or cannot be read at all).
_UNREADABLE = frozenset({"hidden_table", "hidden_column", "parse_error"})
EXAMPLE_VERDICTS_KEPT = 1024


def prepare(snapshot: SchemaSnapshot, rules: RuleSet, sample_values: int) -> _Prepared:
    # Kept on the snapshot, so it goes with it on refresh; a reload of the rules replaces it.
    cached: _Prepared | None = snapshot.prepared
    if cached is not None and cached.rules is rules and cached.sample_values == sample_values:
        return cached
    schema = visible_schema(snapshot.schema, rules)
    scoped = snapshot.full is not None
    redact = Redactor(rules, snapshot.full, snapshot.schema) if snapshot.full is not None \
        else Redactor(rules, snapshot.schema)
    visible = {t.qualified_name for t in schema.tables}
    filtered = row_filtered(rules, snapshot.full if snapshot.full is not None else snapshot.schema)
    values = {key: found for key, found in snapshot.values.items()
              if key[0] in visible and not rules.is_hidden_column(key[0], key[1])
              and not is_row_filtered(key[0], filtered)}
    policy = _examples_policy(snapshot, schema, rules, filtered) if scoped else None
    dependent = None
    if scoped and snapshot.full is not None and (snapshot.row_secured or filtered):
        reader = frozenset(name.lower() for name in snapshot.row_secured) | filtered
        dependent = Redactor(RuleSet(rules.database, hidden_tables=reader), snapshot.full)
    words = table_words(schema.tables, values, rules.table_descriptions)
    prepared = _Prepared(rules, sample_values, schema, redact, values,
                         Renderer(schema, values, sample_values, redact), neighbours(schema.tables),
                         ValueIndex.of(values), words, TableIndex.of(words), policy,
                         {} if scoped else None, [] if scoped else None, dependent)
    snapshot.prepared = prepared
    return prepared


def _examples_policy(snapshot: SchemaSnapshot, readable: Schema, rules: RuleSet,
                     filtered: frozenset[str]) -> safety.Policy:
    """What a verified example shown to this caller may not read: tables and columns outside its view, and
    tables whose rows depend on the reader (an example's literals may spell another caller's rows)."""
    assert snapshot.full is not None
    shown = {t.qualified_name: {c.name for c in t.columns} for t in readable.tables}
    tables = {t.qualified_name.lower() for t in snapshot.full.tables if t.qualified_name not in shown}
    tables |= {name.lower() for name in snapshot.row_secured} | filtered
    columns = {f"{t.qualified_name}.{c.name}".lower() for t in snapshot.full.tables if t.qualified_name in shown
               for c in t.columns if c.name not in shown[t.qualified_name]}
    return safety.Policy(hidden_tables=frozenset(tables) | rules.hidden_tables,
                         hidden_columns=frozenset(columns) | rules.hidden_columns,
                         extra_functions=rules.extra_functions)


def semantic_grounding(model: SemanticModel, text: str, hidden: Callable[[str], bool]) -> str:
    """The semantic model's catalog for the metrics and dimensions ``text`` touches; "" when it touches none."""
    from gateway.semantic.grounding import touched
    from gateway.semantic.prompts import catalog

    found = touched(model, text)
    if not found:
        return ""
    lines = [line for line in catalog(model, found).splitlines() if not hidden(line)]
    return ("Semantic model: a column named as one of these metrics must compute exactly its definition, joining "
            "only along the model's relationships.\n" + "\n".join(lines))


def semantic_value_hints(model: SemanticModel, text: str, schema: Schema, hints: list[ValueHint]) -> list[ValueHint]:
    """``hints`` plus a hint for each value synonym of the model found as whole words in ``text``, for the
    columns the caller's schema shows (a hidden column has no table entry here, so it yields nothing)."""
    from gateway.semantic.grounding import _norm

    words = _norm(text)
    out = list(hints)
    for word, table_name, column, value in model.value_synonyms():
        phrase = _norm(word)
        table = schema.table(table_name)
        if phrase.strip() and phrase in words and table is not None and any(c.name == column for c in table.columns):
            hint = ValueHint(word, table.qualified_name, column, value, 1.0)
            if not any((h.table, h.column, h.value) == (hint.table, hint.column, hint.value) for h in out):
                out.insert(0, hint)
            words = words.replace(phrase, " | ")
    return out


async def build_context(sources: Sources, settings: ContextSettings, target: Target, rules: RuleSet,
                        question: str, evidence: str | None, *, role: str | None = None,
                        claims: tuple[tuple[str, str], ...] = (), semantic: SemanticModel | None = None) -> Context:
    """The context for ``question`` on ``target`` under ``rules``, as a caller acting as Postgres ``role``
    with row-policy ``claims`` may read it; DatabaseUnavailable when it cannot, ``unknown_pg_role``.
    ``semantic``: the database's semantic model; the metrics and dimensions the question touches join the
    rules text with their exact definitions (a line naming a hidden object is left out)."""
    database = target.name
    text = question if not evidence else f"{question}\n{evidence}"
    snapshot = await sources.schemas.view(target, rules, role, claims, question=text)
    prepared = prepare(snapshot, rules, settings.sample_values)
    redact, render = prepared.redact, prepared.render

    hints = await match_values(target, snapshot.trgm_schema, phrases(text), prepared.value_index,
                               settings.value_match_threshold, settings.max_value_hints)

    scores = prepared.index.score(terms(text), identifiers(text), {h.table for h in hints})
    chosen = select(render.order, render, scores, prepared.adjacency, settings.token_budget,
                    whole=render.fits(settings.token_budget), position=render.position)
    kept = [name for name, _ in chosen]
    schema_text = "\n\n".join(render(n).compact if compact else render(n).full for n, compact in chosen)
    rules_text = render_rules(rules, kept, redact)
    if semantic is not None and not semantic.is_empty():
        grounding = semantic_grounding(semantic, text, redact.mentions_hidden)
        rules_text = "\n\n".join(filter(None, [rules_text, grounding]))

    guideline = prepared.guideline_for(await sources.guidelines.active(database))
    examples = await sources.examples.similar(database, question, settings.examples) if settings.examples else []
    # A verified example that names a hidden object (from before it was hidden), or reads what the caller
    # may not, must not reach the prompt.
    examples = [e for e in examples if prepared.shows(e)]
    if semantic is not None:  # the model's value synonyms ("NA" is 'North America'), on visible columns only
        hints = semantic_value_hints(semantic, text, prepared.schema, hints)
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
