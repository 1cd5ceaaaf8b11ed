"""Clarifying questions: the model may say, in a ``<clarify>`` block, that a question is ambiguous.

The generation prompt offers it (:data:`gateway.pipeline.prompts.CLARIFY_OFFER`) when the database's
``ask.clarifications`` allows it and the conversation's latest turn was not itself a clarification (one
round at a time: a reply to a clarification gets SQL, not another question). ``POST /v1/ask`` then answers
status ``needs_clarification`` with the question to put to the user and its options; no SQL runs. The
user's reply is the next turn of the same conversation, which shows the clarification and the reply to the
model. A ``<clarify>`` reply where none was offered, or next to SQL, is not a clarification: the SQL wins,
and without SQL it is a ``no_sql`` attempt like any reply without SQL.

>>> c = parse_clarification("<clarify><question>Order date or ship date?</question>"
...                         "<option>order date</option><option>ship date</option></clarify>")
>>> c.question, c.options
('Order date or ship date?', ['order date', 'ship date'])
>>> parse_clarification("<clarify>Which year?</clarify>").question
'Which year?'
>>> parse_clarification("<sql>SELECT 1</sql>") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gateway.sql.masking import mask

_BLOCK = re.compile(r"<clarify>(.*?)(?:</clarify>|\Z)", re.IGNORECASE | re.DOTALL)
_QUESTION = re.compile(r"<question>(.*?)(?:</question>|\Z)", re.IGNORECASE | re.DOTALL)
_OPTION = re.compile(r"<option>(.*?)</option>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"</?\s*(?:clarify|question|option)\s*>", re.IGNORECASE)

MAX_QUESTION_CHARS = 1000
MAX_OPTIONS = 8
MAX_OPTION_CHARS = 200


@dataclass(frozen=True, slots=True)
class Clarification:
    """What to ask the user: one question and, where the model gave them, a few options to choose from."""

    question: str
    options: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"question": self.question, "options": list(self.options)}

    def masked(self, names: list[str]) -> Clarification:
        return Clarification(mask(self.question, names), [mask(o, names) for o in self.options])


def parse_clarification(text: str) -> Clarification | None:
    """The ``<clarify>`` block of an LLM reply (the last one), or None when there is none or it is empty."""
    blocks = _BLOCK.findall(text)
    if not blocks:
        return None
    body = blocks[-1]
    options = [_clean(o, MAX_OPTION_CHARS) for o in _OPTION.findall(body)]
    options = list(dict.fromkeys(o for o in options if o))[:MAX_OPTIONS]
    found = _QUESTION.search(body)
    question = found.group(1) if found else _OPTION.sub("", body)
    question = _clean(question, MAX_QUESTION_CHARS)
    if not question:
        return None
    return Clarification(question, options)


def without_clarification(text: str) -> str:
    """``text`` without its ``<clarify>`` blocks: what SQL extraction reads (a question is never SQL)."""
    return _BLOCK.sub("", text)


def _clean(text: str, limit: int) -> str:
    text = " ".join(_TAG.sub(" ", text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
