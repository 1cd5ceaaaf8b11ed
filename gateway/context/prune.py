"""Pruning: which tables a question needs, within a token budget, found by retrieval so that it scales.

When the whole schema fits the budget it is kept whole (pruning can only lose information). Otherwise the
tables are ranked by lexical retrieval over an inverted index built once per schema snapshot
(:class:`TableIndex`): each of the question's words (numbers included, so "account asset 1341" meets
``account_asset_1341``) adds its inverse document frequency (BM25's idf: a word in every table adds almost
nothing, a word in one table a lot) times a field weight: the table's name (3), its column names (2), its
comments and the DBA's descriptions (1), its sample values (2). A table the question names exactly, and the
tables value hints point to, get a bonus. Tables under a quarter of the best score count as unrelated. The
work per question is proportional to the postings of the question's words, not to the number of tables.

Tables are then taken greedily while they fit, by score plus a bonus for a foreign-key bridge between two
kept tables (``customers`` between ``orders`` and ``regions``: the join path is needed even when the question
never names it); direct neighbours of the best-scored table come last. A table that does not fit in full is
tried in compact form (no comments or sample values): the best tables are kept whole, never cut.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gateway.context.words import keywords, name_words, terms
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
        column_words = frozenset().union(*(name_words(c.name) for c in table.columns))
        text = " ".join([table.comment or "", descriptions.get(table.name, "")]
                        + [c.comment or "" for c in table.columns])
        sampled = " ".join(v for c in table.columns for v in values.get((table.qualified_name, c.name), ()))
        out[table.qualified_name] = TableWords(name_words(table.name), column_words,
                                               frozenset(keywords(text)), frozenset(terms(sampled)))
    return out


# Field weights: a word of the table's name says most, its comments least.
NAME, COLUMNS, TEXT, SAMPLED = 3.0, 2.0, 1.0, 2.0
HINTED = 4.0  # a value hint points to the table: as good as four rare words of its comments
NAMED = 10.0  # the question spells the table's name (``account_asset_1341``, ``sales.orders``)
CANDIDATES_MAX = 64  # the best-scored tables selection considers (plus their foreign-key neighbours)
LINKED_MAX = 8  # the best tables whose foreign-key neighbours are considered as bridges or one-hop joins
NEIGHBOURS_MAX = 96  # most such neighbours
COMMON_SHARE = 0.25  # a word in more than this share of the tables adds little: skipped when rarer ones match


@dataclass(frozen=True, slots=True)
class TableIndex:
    """An inverted index of the tables' words with BM25's inverse document frequencies: built once per
    schema snapshot and rules, it scores a question by the postings of its words alone."""

    postings: dict[str, list[tuple[str, float]]]  # word -> (table, field weight), every table holding it
    idf: dict[str, float]
    names: dict[str, str]  # lower-cased name and qualified name -> qualified name
    rare: float  # the idf of a word found in one table: the unit of the bonuses

    @classmethod
    def of(cls, words: dict[str, TableWords]) -> TableIndex:
        weights: dict[str, dict[str, float]] = {}
        for name, table in words.items():
            for field_words, weight in ((table.name, NAME), (table.columns, COLUMNS), (table.text, TEXT),
                                        (table.sampled, SAMPLED)):
                for word in field_words:
                    per = weights.setdefault(word, {})
                    per[name] = per.get(name, 0.0) + weight
        n = len(words)
        postings = {word: list(per.items()) for word, per in weights.items()}
        idf = {word: _idf(n, len(per)) for word, per in postings.items()}
        names: dict[str, str] = {}
        for name in words:
            names.setdefault(name.lower(), name)
            names.setdefault(name.rsplit(".", 1)[-1].lower(), name)
        return cls(postings, idf, names, _idf(n, 1))

    def score(self, question_words: set[str], spelled: set[str], hinted: set[str]) -> dict[str, float]:
        """Tables sharing anything with the question, by score (tables sharing nothing are left out).

        ``spelled``: the question's identifiers as written (lower case, ``_`` and ``.`` kept)."""
        scores: dict[str, float] = {}
        common = COMMON_SHARE * len(self.names)
        known = sorted((w for w in question_words if w in self.postings), key=lambda w: len(self.postings[w]))
        for word in known:
            found = self.postings[word]
            if scores and len(found) > common and len(found) > CANDIDATES_MAX:
                break  # the rarer words found the tables; this one would only add to thousands of them
            idf = self.idf[word]
            for table, weight in found:
                scores[table] = scores.get(table, 0.0) + idf * weight
        for table in hinted:
            scores[table] = scores.get(table, 0.0) + HINTED * self.rare
        for identifier in spelled:
            named = self.names.get(identifier)
            if named is not None:
                scores[named] = scores.get(named, 0.0) + NAMED * self.rare
        return scores


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def score_tables(words: dict[str, TableWords], question_words: set[str], hinted: set[str]) -> dict[str, float]:
    """Every table's score for a question (0 when it shares nothing): :meth:`TableIndex.score` on an index
    built for this call."""
    scores = TableIndex.of(words).score(question_words, set(), hinted)
    return {name: scores.get(name, 0.0) for name in words}


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


def select(tables: Sequence[str], render: Callable[[str], Rendered], scores: dict[str, float],
           adjacency: dict[str, set[str]], budget: int, *, whole: bool | None = None,
           position: dict[str, int] | None = None) -> list[tuple[str, bool]]:
    """(table, compact?) pairs to show, in the schema's order (``tables``); the total stays within ``budget``.

    ``render`` gives a table's rendering (the caller memoizes it: only the tables considered are rendered);
    ``whole``: whether the whole schema fits the budget, when the caller knows it already; ``position``: each
    table's index in ``tables``, when the caller keeps it. The best-scored
    table is always shown (compact if need be), even alone over budget: a prompt with no table at all cannot
    be answered.
    """
    if whole is None:
        whole = fits(tables, render, budget)
    if whole:
        return [(name, False) for name in tables]
    chosen: dict[str, bool] = {}
    used = 0

    def take(name: str, force: bool = False) -> bool:
        nonlocal used
        r = render(name)
        if used + r.full_tokens <= budget:
            chosen[name], used = False, used + r.full_tokens
        elif used + r.compact_tokens <= budget or force:
            chosen[name], used = True, used + r.compact_tokens
        else:
            return False
        return True

    order = position if position is not None else {name: i for i, name in enumerate(tables)}
    top = max(scores.values(), default=0.0)
    # A single shared word in a long comment is noise next to a table the question names.
    ranked = heapq.nsmallest(CANDIDATES_MAX, (n for n, s in scores.items()
                                              if s > 0 and s >= RELEVANT_SHARE * top and n in order),
                             key=lambda n: (-scores[n], order[n]))
    scored = set(ranked)
    if not scored:  # nothing in common with the question: show what fits, in the schema's order
        misses = 0
        for i, name in enumerate(tables):
            if not take(name, force=i == 0):
                misses += 1
                if misses > 16:  # the budget is full: the remaining tables need not all be tried
                    break
        return sorted(chosen.items(), key=lambda item: order[item[0]])
    best_tables = {n for n in scored if scores[n] == top}
    # Who may be taken: the scored tables and, as bridges or one-hop joins, their neighbours.
    universe = set(scored)
    for name in ranked[:LINKED_MAX]:
        for other in adjacency.get(name, ()):
            if len(universe) >= len(scored) + NEIGHBOURS_MAX:
                break
            if other in order:
                universe.add(other)
    skipped: set[str] = set()
    while True:
        # Greedy by priority: a table's own score, plus a bonus for bridging two kept tables. Other
        # tables qualify only as bridges or as direct neighbours of the best-scored table (one hop).
        best: tuple[float, int, str] | None = None
        for name in universe:
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
        if not take(best[2], force=not chosen):
            skipped.add(best[2])
    return sorted(chosen.items(), key=lambda item: order[item[0]])


def fits(tables: Sequence[str], render: Callable[[str], Rendered], budget: int) -> bool:
    """Whether every table fits the budget in full (renders no more tables than it takes to know)."""
    used = 0
    for name in tables:
        used += render(name).full_tokens
        if used > budget:
            return False
    return True
