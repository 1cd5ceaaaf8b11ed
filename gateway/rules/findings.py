"""Rule violations of one attempt, as ``rule_violation`` findings: required conditions missing from the SQL,
result checks that fail."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gateway.findings import Finding
from gateway.rules.conditions import missing_conditions
from gateway.rules.model import ResultCheck, RuleSet


def _violation(rule: str, message: str) -> Finding:
    return Finding("rule_violation", message, detail={"rule": rule})


def rule_findings(ruleset: RuleSet, sql: str, columns: Sequence[Any] = (),
                  rows: Sequence[Sequence[Any]] = ()) -> list[Finding]:
    """Violations of ``ruleset`` by ``sql`` and, when it ran, its result: ``rule_violation`` findings whose
    ``detail['rule']`` is the rule's name from the rule file.

    ``columns`` are names or objects with a ``name`` (``gateway.execute.Column``); ``rows`` are lists of
    values in column order. Pass no columns for SQL that did not run.
    """
    out = [
        _violation(c.name, f"{c.message} (add: {c.sql}, on every read of {c.applies_to})")
        for c in missing_conditions(sql, ruleset.required_conditions)
    ]
    names = [str(getattr(c, "name", c)).lower() for c in columns]
    for check in ruleset.result_checks:
        if check.column.lower() in names:
            problem = _check_column(check, names.index(check.column.lower()), rows)
            if problem:
                out.append(_violation(check.name, f"{check.message or check.name}: {problem}"))
    return out


def _check_column(check: ResultCheck, index: int, rows: Sequence[Sequence[Any]]) -> str | None:
    for number, row in enumerate(rows, start=1):
        value = row[index] if index < len(row) else None
        if value is None:
            if check.not_null:
                return f"row {number} has NULL in {check.column}"
            continue
        try:
            number_value = float(value)  # numeric arrives as an exact decimal string
        except (TypeError, ValueError):
            continue
        if math.isnan(number_value):
            continue
        if check.min is not None and number_value < check.min:
            return f"row {number} has {check.column} = {value}, below the minimum {check.min:g}"
        if check.max is not None and number_value > check.max:
            return f"row {number} has {check.column} = {value}, above the maximum {check.max:g}"
    return None
