"""Value matching: phrases of the question that name values stored in low-cardinality text columns.

``'nord america'`` or ``'NORTH AMERICA'`` becomes the stored literal ``'North America'``, so the LLM writes
a filter that matches. Scoring uses pg_trgm's ``similarity`` in the database when the extension is
installed (one round trip over the cached distinct values), else Python's difflib on lower-cased text.

Either way only the values that can reach the threshold are scored, so that a schema of thousands of
sampled columns costs a question no more than a small one: the value index keeps pg_trgm's trigrams of
every value (an inverted index), and a value qualifies when the trigrams it shares with the phrase allow a
trigram similarity of at least the threshold (for pg_trgm an exact bound: similarity is shared / union), or
half of it for difflib's ratio (a heuristic: both measure shared letters in order).
"""

from __future__ import annotations

import difflib
import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.context.model import ValueHint
from gateway.execute import Target
from gateway.execute import samples as sample_queries

# Keep, for each phrase, only the values nearly as good as its best one: 'north america' should not
# also suggest 'South America' just because both clear the threshold.
NEAR_BEST = 0.1
# Phrases whose pg_trgm matches a value index remembers (then it starts over): questions repeat their
# phrases ('north america', 'last month'), and the scores only change with the values, i.e. the snapshot.
PHRASES_KEPT = 4096
_WORD = re.compile(r"[^\W_]+")
DIFFLIB_SHARE = 0.5  # difflib's candidates: trigram similarity at least this share of the threshold


def trigrams(text: str) -> set[str]:
    """pg_trgm's trigrams of ``text``: lower case, each word padded with two spaces before and one after.

    >>> sorted(trigrams("Mobil"))
    ['  m', ' mo', 'bil', 'il ', 'mob', 'obi']
    """
    out: set[str] = set()
    for word in _WORD.findall(text.lower()):
        padded = f"  {word} "
        out.update(padded[i:i + 3] for i in range(len(padded) - 2))
    return out


@dataclass(frozen=True, slots=True)
class ValueIndex:
    """The sampled values, deduplicated and sorted, and where each is stored: the same for every question
    until the schema snapshot or the rules change, so the context stage builds it once per snapshot."""

    distinct: list[str]
    where: dict[str, list[tuple[str, str]]]
    # (phrase, threshold) -> (value index, similarity) pairs at or above the threshold, from pg_trgm
    scored: dict[tuple[str, float], list[tuple[int, float]]] = field(default_factory=dict, compare=False)
    grams: dict[str, list[int]] = field(default_factory=dict, compare=False)  # trigram -> values holding it
    sizes: list[int] = field(default_factory=list, compare=False)  # each value's number of trigrams

    @classmethod
    def of(cls, values: dict[tuple[str, str], list[str]]) -> ValueIndex:
        where: dict[str, list[tuple[str, str]]] = {}
        for (table, column), found in values.items():
            for value in found:
                where.setdefault(value, []).append((table, column))
        distinct = sorted(where)
        grams: dict[str, list[int]] = {}
        sizes: list[int] = []
        for i, value in enumerate(distinct):
            own = trigrams(value)
            sizes.append(len(own))
            for gram in own:
                grams.setdefault(gram, []).append(i)
        return cls(distinct, where, grams=grams, sizes=sizes)

    def candidates(self, phrase: str, least: float) -> list[int]:
        """The values whose trigram similarity to ``phrase`` can be at least ``least`` (sorted indexes)."""
        own = trigrams(phrase)
        if not own:
            return []
        shared: dict[int, int] = {}
        for gram in own:
            for v in self.grams.get(gram, ()):
                shared[v] = shared.get(v, 0) + 1
        size, sizes = len(own), self.sizes
        return sorted(v for v, n in shared.items() if n >= least * (size + sizes[v] - n) - 1e-9)


async def match_values(target: Target | None, trgm_schema: str | None, phrases: Sequence[str],
                       values: dict[tuple[str, str], list[str]] | ValueIndex, threshold: float,
                       limit: int) -> list[ValueHint]:
    """The best hints, highest score first, at most one per stored value and at most ``limit``."""
    index = values if isinstance(values, ValueIndex) else ValueIndex.of(values)
    if not phrases or not index.distinct or limit <= 0:
        return []
    distinct, where = index.distinct, index.where
    if target is not None and trgm_schema is not None:
        scores = await _trigram_scores(index, target, trgm_schema, phrases, threshold)
    else:
        scores = _python_scores(index, phrases, threshold)
    best_for_phrase: dict[int, float] = {}
    for p, _, score in scores:
        best_for_phrase[p] = max(best_for_phrase.get(p, 0.0), score)
    # (rounded score, phrase length, phrase) of the best phrase per stored place and value
    best: dict[tuple[str, str, str], tuple[float, int, str]] = {}
    for p, v, score in scores:
        if score < best_for_phrase[p] - NEAR_BEST:
            continue
        value = distinct[v]
        mine = (round(score, 3), len(phrases[p]), phrases[p])
        for table, column in where[value]:
            key = (table, column, value)
            current = best.get(key)
            if current is None or mine[:2] > current[:2]:
                best[key] = mine
    # Only the best ``limit`` become hints: a common value ('open') may be stored in thousands of columns.
    ranked = heapq.nsmallest(limit, best.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [ValueHint(phrase, table, column, value, score) for (table, column, value), (score, _, phrase) in ranked]


async def _trigram_scores(index: ValueIndex, target: Target, trgm_schema: str, phrases: Sequence[str],
                          threshold: float) -> list[tuple[int, int, float]]:
    """pg_trgm's scores, one round trip for the phrases the index has not scored yet (none when all are)."""
    known = {p: index.scored[(p, threshold)] for p in phrases if (p, threshold) in index.scored}
    missing = [p for p in dict.fromkeys(phrases) if p not in known]
    if missing:
        # Only values that can clear the threshold go to the database (pg_trgm's own bound, with a margin
        # for words split differently in other locales).
        pool = sorted(set().union(*(index.candidates(p, threshold * 0.8) for p in missing)))
        found = await sample_queries.trigram_scores(target, trgm_schema, missing, [index.distinct[v] for v in pool],
                                                    threshold)
        fresh: dict[str, list[tuple[int, float]]] = {p: [] for p in missing}
        for p, v, score in found:
            fresh[missing[p]].append((pool[v], score))
        if len(index.scored) + len(fresh) > PHRASES_KEPT:
            index.scored.clear()
        index.scored.update(((p, threshold), hits) for p, hits in fresh.items())
        known.update(fresh)
    return [(i, v, score) for i, p in enumerate(phrases) for v, score in known[p]]


def _python_scores(index: ValueIndex, phrases: Sequence[str], threshold: float) -> list[tuple[int, int, float]]:
    """difflib's scores over each phrase's trigram candidates, remembered per phrase as pg_trgm's are."""
    out: list[tuple[int, int, float]] = []
    for p, phrase in enumerate(phrases):
        key = (phrase, -threshold)  # negative: never mistaken for pg_trgm's scores of the same phrase
        hits = index.scored.get(key)
        if hits is None:
            pool = index.candidates(phrase, threshold * DIFFLIB_SHARE)
            hits = [(pool[v], score) for _, v, score in python_scores([phrase], [index.distinct[v] for v in pool],
                                                                        threshold)]
            if len(index.scored) >= PHRASES_KEPT:
                index.scored.clear()
            index.scored[key] = hits
        out.extend((p, v, score) for v, score in hits)
    return out


def python_scores(phrases: Sequence[str], values: Sequence[str], threshold: float) -> list[tuple[int, int, float]]:
    """The fallback without pg_trgm: difflib's ratio on lower-cased text, quick bounds first."""
    out: list[tuple[int, int, float]] = []
    lowered = [v.lower() for v in values]
    for p, phrase in enumerate(phrases):
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(phrase.lower())
        for v, value in enumerate(lowered):
            matcher.set_seq1(value)
            if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
                continue
            score = matcher.ratio()
            if score >= threshold:
                out.append((p, v, score))
    return out
