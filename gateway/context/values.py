"""Value matching: phrases of the question that name values stored in low-cardinality text columns.

``'nord america'`` or ``'NORTH AMERICA'`` becomes the stored literal ``'North America'``, so the LLM writes
a filter that matches. Scoring uses pg_trgm's ``similarity`` in the database when the extension is
installed (one round trip over the cached distinct values), else Python's difflib on lower-cased text.
"""

from __future__ import annotations

import difflib
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


@dataclass(frozen=True, slots=True)
class ValueIndex:
    """The sampled values, deduplicated and sorted, and where each is stored: the same for every question
    until the schema snapshot or the rules change, so the context stage builds it once per snapshot."""

    distinct: list[str]
    where: dict[str, list[tuple[str, str]]]
    # (phrase, threshold) -> (value index, similarity) pairs at or above the threshold, from pg_trgm
    scored: dict[tuple[str, float], list[tuple[int, float]]] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, values: dict[tuple[str, str], list[str]]) -> ValueIndex:
        where: dict[str, list[tuple[str, str]]] = {}
        for (table, column), found in values.items():
            for value in found:
                where.setdefault(value, []).append((table, column))
        return cls(sorted(where), where)


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
        scores = python_scores(phrases, distinct, threshold)
    best_for_phrase: dict[int, float] = {}
    for p, _, score in scores:
        best_for_phrase[p] = max(best_for_phrase.get(p, 0.0), score)
    best: dict[tuple[str, str, str], ValueHint] = {}
    for p, v, score in scores:
        if score < best_for_phrase[p] - NEAR_BEST:
            continue
        value = distinct[v]
        for table, column in where[value]:
            key = (table, column, value)
            hint = ValueHint(phrases[p], table, column, value, round(score, 3))
            current = best.get(key)
            if current is None or (hint.score, len(hint.phrase)) > (current.score, len(current.phrase)):
                best[key] = hint
    ranked = sorted(best.values(), key=lambda h: (-h.score, h.table, h.column, h.value))
    return ranked[:limit]


async def _trigram_scores(index: ValueIndex, target: Target, trgm_schema: str, phrases: Sequence[str],
                          threshold: float) -> list[tuple[int, int, float]]:
    """pg_trgm's scores, one round trip for the phrases the index has not scored yet (none when all are)."""
    known = {p: index.scored[(p, threshold)] for p in phrases if (p, threshold) in index.scored}
    missing = [p for p in dict.fromkeys(phrases) if p not in known]
    if missing:
        found = await sample_queries.trigram_scores(target, trgm_schema, missing, index.distinct, threshold)
        fresh: dict[str, list[tuple[int, float]]] = {p: [] for p in missing}
        for p, v, score in found:
            fresh[missing[p]].append((v, score))
        if len(index.scored) + len(fresh) > PHRASES_KEPT:
            index.scored.clear()
        index.scored.update(((p, threshold), hits) for p, hits in fresh.items())
        known.update(fresh)
    return [(i, v, score) for i, p in enumerate(phrases) for v, score in known[p]]


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
