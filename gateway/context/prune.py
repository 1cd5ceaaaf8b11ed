"""Pruning: which tables a question needs, within a token budget.

When the whole schema fits the budget it is kept whole (pruning can only lose information). Otherwise each
table is scored by the question's keywords it shares with its name (weight 3), its column names (2), its
comments and the DBA's descriptions (1) and its sample values (2), plus the tables that value hints point
to (4); tables under a quarter of the best score count as unrelated. Tables are then taken greedily while
they fit, by score plus a bonus for a foreign-key bridge between two kept tables (``customers`` between
``orders`` and ``regions``: the join path is needed even when the question never names it); direct
neighbours of the best-scored table come last. A table that does not fit in full is tried in compact form
(no comments or sample values).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gateway.context.words import keywords, name_words
from gateway.execute.introspect import TableInfo

RELEVANT_SHARE = 0.25  # a table scoring under this share of the best one counts as unrelated


@dataclass(frozen=True, slots=True)
class Rendered:
    name: str
    full: str
    compact: str
    full_tokens: int
    compact_tokens: int


@dataclass(frozen=True, slots=True)
class TableWords:
    """A table's words that do not depend on the question: worked out once per schema snapshot and rules."""

    name: frozenset[str]
    columns: frozenset[str]
    text: frozenset[str]  # comments and the DBA's description
    sampled: frozenset[str]  # sample values


def table_words(tables: Iterable[TableInfo], values: dict[tuple[str, str], list[str]],
                descriptions: dict[str, str]) -> dict[str, TableWords]:
    out: dict[str, TableWords] = {}
    for table in tables:
        column_words = set().union(*(name_words(c.name) for c in table.columns)) if table.columns else set()
        text = " ".join([table.comment or "", descriptions.get(table.name, "")]
                        + [c.comment or "" for c in table.columns])
        sampled = " ".join(v for c in table.columns for v in values.get((table.qualified_name, c.name), ()))
        out[table.qualified_name] = TableWords(frozenset(name_words(table.name)), frozenset(column_words),
                                               frozenset(keywords(text)), frozenset(keywords(sampled)))
    return out


def score_tables(words: dict[str, TableWords], question_words: set[str], hinted: set[str]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for name, table in words.items():
        score = 3.0 * len(question_words & table.name)
        score += 2.0 * len(question_words & table.columns)
        score += 1.0 * len(question_words & table.text)
        score += 2.0 * len(question_words & table.sampled)
        if name in hinted:
            score += 4.0
        scores[name] = score
    return scores


def neighbours(tables: Iterable[TableInfo]) -> dict[str, set[str]]:
    """Undirected foreign-key adjacency between tables, by qualified name."""
    by_name = {t.qualified_name: t for t in tables}
    out: dict[str, set[str]] = {name: set() for name in by_name}
    for table in by_name.values():
        for fk in table.foreign_keys:
            if fk.ref_table in by_name and fk.ref_table != table.qualified_name:
                out[table.qualified_name].add(fk.ref_table)
                out[fk.ref_table].add(table.qualified_name)
    return out


def select(rendered: list[Rendered], scores: dict[str, float], adjacency: dict[str, set[str]],
           budget: int) -> list[tuple[str, bool]]:
    """(table, compact?) pairs to show, in the schema's order; the total stays within ``budget``.

    The best-scored table is always shown (compact if need be), even alone over budget: a prompt with no
    table at all cannot be answered.
    """
    if sum(r.full_tokens for r in rendered) <= budget:
        return [(r.name, False) for r in rendered]
    by_name = {r.name: r for r in rendered}
    order = {r.name: i for i, r in enumerate(rendered)}
    chosen: dict[str, bool] = {}
    used = 0

    def take(name: str, force: bool = False) -> None:
        nonlocal used
        r = by_name[name]
        if used + r.full_tokens <= budget:
            chosen[name], used = False, used + r.full_tokens
        elif used + r.compact_tokens <= budget or force:
            chosen[name], used = True, used + r.compact_tokens

    top = max(scores.values(), default=0.0)
    # A single shared word in a long comment is noise next to a table the question names.
    scored = {n for n in by_name if scores.get(n, 0) > 0 and scores[n] >= RELEVANT_SHARE * top}
    if not scored:  # nothing in common with the question: show what fits, in the schema's order
        for i, name in enumerate(by_name):
            take(name, force=i == 0)
        return sorted(chosen.items(), key=lambda item: order[item[0]])
    best_tables = {n for n in scored if scores[n] == top}
    skipped: set[str] = set()
    while True:
        # Greedy by priority: a table's own score, plus a bonus for bridging two kept tables. Other
        # tables qualify only as bridges or as direct neighbours of the best-scored table (one hop).
        best: tuple[float, int, str] | None = None
        for name in by_name:
            if name in chosen or name in skipped:
                continue
            links = adjacency.get(name, set())
            bridge = len(links & chosen.keys()) >= 2
            near_scored = bool(links & best_tables)
            if name not in scored and not bridge and not near_scored:
                continue
            priority = scores.get(name, 0) + (3.0 if bridge else 0.0) + (0.5 if near_scored else 0.0)
            if best is None or (priority, -order[name]) > (best[0], -best[1]):
                best = (priority, order[name], name)
        if best is None:
            break
        before = len(chosen)
        take(best[2], force=not chosen)
        if len(chosen) == before:
            skipped.add(best[2])
    return sorted(chosen.items(), key=lambda item: order[item[0]])
