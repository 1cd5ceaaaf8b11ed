"""Scenarios: how much reflection, and which guideline, a question is answered with.

A scenario is a reflection mode crossed with a guideline choice, written ``MODE/GUIDELINE``:

* reflection modes, as in the MAGIC paper's Table 1 (plus the gateway's own default):
  ``first_pass`` (one generation, no reflection), ``errors`` (reflect only on execution errors, blocked SQL
  or no SQL), ``suspicious`` (also on suspicious results: empty, wrong shape, rule violations ...),
  ``all`` (also review SQL that passed validation, against the guideline);
  ``gold_first`` (the first attempt *is* the gold SQL, not the model's: then the loop runs as under
  ``suspicious``; it measures how often validation reflects on, or leaves ``suspicious``, an answer that is
  right, whatever the model);
* guidelines: ``none``, ``default`` (the guideline file that ships in ``guidelines_dir``) or ``vN`` (version
  N from the feedback store, e.g. the one ``guideline regenerate`` just wrote).

>>> [s.name for s in matrix(["first_pass", "errors"], ["none", "v3"])]
['first_pass/none', 'first_pass/v3', 'errors/none', 'errors/v3']
>>> parse_scenario("suspicious/default").reflection
'suspicious'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from gateway.settings import FINDING_CODES_REFLECTED_BY_DEFAULT, AskPolicy

__all__ = [
    "DEFAULT_GUIDELINES",
    "DEFAULT_REFLECTIONS",
    "REFLECTIONS",
    "Scenario",
    "ScenarioError",
    "ask_policy",
    "matrix",
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

    @property
    def name(self) -> str:
        return f"{self.reflection}/{self.guideline}"

    @property
    def guideline_version(self) -> int | None:
        """The store version this scenario asks for, if any."""
        return int(self.guideline[1:]) if self.guideline.startswith("v") else None

    @property
    def baseline(self) -> Scenario:
        """The first-pass scenario with the same guideline: what reflection is measured against."""
        return Scenario("first_pass", self.guideline)


def parse_guideline(text: str) -> str:
    value = text.strip().lower()
    if value in ("none", "default"):
        return value
    digits = value.removeprefix("v")
    if digits.isdigit() and int(digits) > 0:
        return f"v{int(digits)}"
    raise ScenarioError(f"guideline {text!r}: expected none, default or a store version such as v3")


def parse_scenario(text: str) -> Scenario:
    mode, slash, guideline = text.strip().partition("/")
    if mode not in REFLECTIONS:
        raise ScenarioError(f"scenario {text!r}: reflection must be one of {', '.join(REFLECTIONS)}")
    return Scenario(cast(Reflection, mode), parse_guideline(guideline) if slash else "none")


def matrix(reflections: Sequence[str], guidelines: Sequence[str]) -> list[Scenario]:
    """Every reflection mode with every guideline, in the order given, duplicates dropped."""
    scenarios: list[Scenario] = []
    for mode in reflections:
        for guideline in guidelines:
            scenario = parse_scenario(f"{mode}/{guideline}")
            if scenario not in scenarios:
                scenarios.append(scenario)
    return scenarios


def ask_policy(base: AskPolicy, scenario: Scenario) -> AskPolicy:
    """The database's ask policy with the scenario's reflection settings laid over it.

    Model, temperature, time budget and the judge stay as configured: the scenarios differ only in when
    the loop reflects and which attempts see the guideline.
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
    return base.model_copy(update=update)
