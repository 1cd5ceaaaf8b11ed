"""Reading ``<untrusted-data>`` blocks back out of a recorded prompt, for the data-is-not-instructions tests."""

from __future__ import annotations

import re

from gateway.llm.untrusted import TAG

_BLOCK = re.compile(rf'<{TAG} label="(\w+)">\n(.*?)\n</{TAG}>', re.DOTALL)


def blocks(text: str) -> list[tuple[str, str]]:
    """(label, content) of every block, in order."""
    return _BLOCK.findall(text)


def outside(text: str) -> str:
    """``text`` without its blocks: what the LLM is told to read as instructions or as the task."""
    return _BLOCK.sub("", text)


def assert_only_as_data(text: str, phrase: str, label: str) -> None:
    """``phrase`` occurs, only inside blocks, at least once in one labelled ``label``; and no block was
    closed early (every closing tag in the text is the end of a block the gateway opened)."""
    assert text.count(f"<{TAG} ") == text.count(f"</{TAG}>") == len(blocks(text)), text
    assert phrase.casefold() not in outside(text).casefold(), outside(text)
    assert any(name == label and phrase.casefold() in content.casefold() for name, content in blocks(text)), text
