"""The docstring examples of the rules and context modules run as tests."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["gateway.rules.conditions", "gateway.context.words", "gateway.context.render"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
