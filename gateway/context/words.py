"""Words and phrases of a question, lightly normalized, for pruning and value matching.

This is natural-language text, not SQL, so plain tokenizing is the right tool here. Normalizing is
deliberately light (lower case, a plural ``s`` stripped) so that ``orders`` meets ``order_id`` and
``regions`` meets ``region``, without a stemmer's surprises.

>>> sorted(keywords("Revenue per region for Enterprise customers"))
['customer', 'enterprise', 'region', 'revenue']
>>> 'nord america' in phrases("total sales in nord america")
True
>>> phrases('orders with code "WELCOME10"')[0]
'WELCOME10'
"""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"[^\W_]+", re.UNICODE)
QUOTED = re.compile(r"'([^']{1,80})'|\"([^\"]{1,80})\"|“([^”]{1,80})”")
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
DIGITS = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")  # 'asset1341' -> 'asset', '1341'
_SEPARATORS = re.compile(r"[_\W]+")
IDENTIFIER = re.compile(r"[\w.]*[_.][\w.]*")  # a name as written, with '_' or '.': 'account_asset_1341'

STOPWORDS = frozenset([
    "a", "about", "above", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "each",
    "else", "every", "few", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "just", "list", "me", "more", "most", "my", "no", "not", "of", "on", "only", "or", "other", "our",
    "over", "per", "same", "show", "should", "so", "some", "such", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your", "give", "get", "find", "tell", "many", "much", "number", "total", "top",
])


@lru_cache(maxsize=65_536)  # names and words repeat across thousands of tables
def lemma(word: str) -> str:
    """Lower case, without a plural or possessive ending: 'Orders' -> 'order', 'categories' -> 'category'."""
    w = word.lower()
    w = w.removesuffix("'s")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def words(text: str) -> list[str]:
    return WORD.findall(text)


def keywords(text: str) -> set[str]:
    """The question's content words, lemmatized, without stop words."""
    return {lemma(w) for w in words(text) if w.lower() not in STOPWORDS and len(w) > 1 and not w.isdigit()}


def terms(text: str) -> set[str]:
    """What retrieval looks up for a question: its keywords, and its numbers, which tell apart tables of
    the same words ('account asset 1341').

    >>> sorted(terms("How many rows in account asset 1341?"))
    ['1341', 'account', 'asset', 'row']
    """
    return keywords(text) | {w for w in words(text) if w.isdigit()}


def identifiers(text: str) -> set[str]:
    """Names the question spells with ``_`` or ``.``, lower case: ``account_asset_1341``, ``sales.orders``."""
    return {m.strip(".").lower() for m in IDENTIFIER.findall(text) if m.strip("._")}


@lru_cache(maxsize=65_536)  # column names repeat across thousands of tables
def name_words(identifier: str) -> frozenset[str]:
    """'order_items' -> {'order', 'item'}; 'customerId' -> {'customer', 'id'}; 'asset1341' -> {'asset', '1341'}."""
    parts = _SEPARATORS.split(DIGITS.sub("_", CAMEL.sub("_", identifier)))
    return frozenset(lemma(p) for p in parts if p)


def phrases(text: str, max_words: int = 3) -> list[str]:
    """Candidate mentions of stored values: quoted strings, runs of capitalized words, then 1-3 word n-grams.

    N-grams made only of stop words, and single short or numeric words, are skipped: they match
    everything and mean nothing.
    """
    out: list[str] = []
    for match in QUOTED.finditer(text):
        out.append(next(g for g in match.groups() if g))
    tokens = words(QUOTED.sub(" ", text))
    run: list[str] = []
    for token in tokens + [""]:
        if token[:1].isupper() and token.lower() not in STOPWORDS:
            run.append(token)
        else:
            if len(run) > 1:
                out.append(" ".join(run))
            run = []
    for size in range(1, max_words + 1):
        for i in range(len(tokens) - size + 1):
            gram = tokens[i:i + size]
            if all(t.lower() in STOPWORDS for t in gram):
                continue
            if gram[0].lower() in STOPWORDS or gram[-1].lower() in STOPWORDS:
                continue  # 'in nord' adds nothing to 'nord'
            if size == 1 and (len(gram[0]) < 3 or gram[0].isdigit()):
                continue
            out.append(" ".join(gram))
    return list(dict.fromkeys(out))
