"""Scenarios: how many candidates, how much reflection, and which guideline, a question is answered with.

A scenario is a reflection mode crossed with a guideline choice and a number of first-pass candidates,
written ``MODE/GUIDELINE`` (one candidate: a single generation) or ``MODE/GUIDELINE/cN`` (``ask.candidates``
= N, e.g. ``first_pass/none/c5``):

* reflection modes, as in the MAGIC paper's Table 1 (plus the gateway's own default):
  ``first_pass`` (one generation, no reflection), ``errors`` (reflect only on execution errors, blocked SQL
  or no SQL), ``suspicious`` (also on suspicious results: empty, wrong shape, rule violations ...),
  ``all`` (also review SQL that passed validation, against the guideline);
  ``gold_first`` (the first attempt *is* the gold SQL, not the model's: then the loop runs as under
  ``suspicious``; it measures how often validation reflects on, or leaves ``suspicious``, an answer that is
  right, whatever the model);
* guidelines: ``none``, ``default`` (the guideline file that ships in ``guidelines_dir``) or ``vN`` (version
  N from the feedback store, e.g. the one ``guideline regenerate`` just wrote).

With candidates, the first candidate is drawn exactly as the single generation is (same prompt, same
temperature), so the report's *first pass*, *fixed* and *broken* compare the chosen answer with the single
generation of the same request.

>>> [s.name for s in matrix(["first_pass", "errors"], ["none", "v3"])]
['first_pass/none', 'first_pass/v3', 'errors/none', 'errors/v3']
>>> [s.name for s in matrix(["first_pass"], ["none"], [1, 5])]
['first_pass/none', 'first_pass/none/c5']
>>> parse_scenario("suspicious/default").reflection, parse_scenario("first_pass/none/c3").candidates
('suspicious', 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gateway.settings import FINDING_CODES_REFLECTED_BY_DEFAULT, AskPolicy

__all__ = [
    "DEFAULT_GUIDELINES",
    "DEFAULT_REFLECTIONS",
    "REFLECTIONS",
    "Scenario",
    "ScenarioError",
    "ask_policy",
    "matrix",
    "parse_candidates",
    "parse_guideline",
    "parse_scenario",
]

Reflection = Literal["first_pass", "errors", "suspicious", "all", "gold_first"]
REFLECTIONS: tuple[Reflection, ...] = ("first_pass", "errors", "suspicious", "all", "gold_first")
DEFAULT_REFLECTIONS: tuple[Reflection, ...] = ("first_pass", "errors", "suspicious")
DEFAULT_GUIDELINES: tuple[str, ...] = ("none", "default")


class ScenarioError(ValueError):
    """A scenario or guideline name that does not parse."""


@dataclass(frozen=True, slots=True, order=True)
class Scenario:
    reflection: Reflection
    guideline: str  # "none", "default" or "v<N>"
    candidates: int = 1  # first-pass candidates (ask.candidates); 1 is a single generation

    @property
    def name(self) -> str:
        base = f"{self.reflection}/{self.guideline}"
        return base if self.candidates == 1 else f"{base}/c{self.candidates}"

    @property
    def guideline_version(self) -> int | None:
        """The store version this scenario asks for, if any."""
        return int(self.guideline[1:]) if self.guideline.startswith("v") else None

    @property
    def baseline(self) -> Scenario:
        """The first-pass scenario with the same guideline: what reflection is measured against."""
        return Scenario("first_pass", self.guideline)


MAX_CANDIDATES = 16  # ask.candidates' own bound


def parse_candidates(text: str) -> int:
    """``5`` or ``c5``: a number of first-pass candidates within ``ask.candidates``' bounds."""
    digits = text.strip().lower().removeprefix("c")
    if digits.isdigit() and 1 <= int(digits) <= MAX_CANDIDATES:
        return int(digits)
    raise ScenarioError(f"candidates {text!r}: expected a number from 1 to {MAX_CANDIDATES}, such as 5 or c5")


def parse_guideline(text: str) -> str:
    value = text.strip().lower()
    if value in ("none", "default"):
        return value
    digits = value.removeprefix("v")
    if digits.isdigit() and int(digits) > 0:
        return f"v{int(digits)}"
    raise ScenarioError(f"guideline {text!r}: expected none, default or a store version such as v3")


def parse_scenario(text: str) -> Scenario:
    mode, slash, rest = text.strip().partition("/")
    if mode not in REFLECTIONS:
        raise ScenarioError(f"scenario {text!r}: reflection must be one of {', '.join(REFLECTIONS)}")
    guideline, slash_c, candidates = rest.partition("/")
    return Scenario(mode, parse_guideline(guideline) if slash else "none",
                    parse_candidates(candidates) if slash_c else 1)


def matrix(reflections: Sequence[str], guidelines: Sequence[str], candidates: Sequence[int | str] = (1,)
           ) -> list[Scenario]:
    """Every reflection mode with every guideline and number of candidates, in the order given, duplicates
    dropped."""
    scenarios: list[Scenario] = []
    for mode in reflections:
        for guideline in guidelines:
            for n in candidates:
                scenario = parse_scenario(f"{mode}/{guideline}/c{parse_candidates(str(n))}")
                if scenario not in scenarios:
                    scenarios.append(scenario)
    return scenarios


def ask_policy(base: AskPolicy, scenario: Scenario) -> AskPolicy:
    """The database's ask policy with the scenario's reflection settings laid over it.

    Model, temperature, time budget and the judge stay as configured: the scenarios differ only in when
    the loop reflects, which attempts see the guideline and how many first-pass candidates are drawn (the
    scenario's number, whatever the database's ``ask.candidates`` says, so that runs compare).
    """
    if scenario.reflection == "first_pass":
        update: dict[str, object] = {"max_iterations": 0}
    elif scenario.reflection == "errors":
        # exec_error, blocked and no_sql always trigger; nothing else does.
        update = {"reflect_on": frozenset(), "guideline_scenario": "errors_only",
                  "max_iterations": base.max_iterations or 3}
    elif scenario.reflection in ("suspicious", "gold_first"):
        update = {"reflect_on": base.reflect_on or FINDING_CODES_REFLECTED_BY_DEFAULT,
                  "guideline_scenario": "suspicious", "max_iterations": base.max_iterations or 3}
    else:
        update = {"reflect_on": base.reflect_on or FINDING_CODES_REFLECTED_BY_DEFAULT,
                  "guideline_scenario": "all", "max_iterations": base.max_iterations or 3}
    return base.model_copy(update={**update, "candidates": scenario.candidates})
