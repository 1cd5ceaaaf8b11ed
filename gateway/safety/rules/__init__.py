"""The safety rules, run in order by :func:`gateway.safety.check`.

Each rule is ``rule(ctx, policy) -> Iterable[Finding]`` in a module named after what it checks; adding a
rule is adding a module and a line here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.rules.amplification import amplification
from gateway.safety.rules.cartesian import cartesian
from gateway.safety.rules.catalogs import catalogs
from gateway.safety.rules.complexity import complexity
from gateway.safety.rules.functions import functions
from gateway.safety.rules.generate_series import generate_series
from gateway.safety.rules.hidden import hidden
from gateway.safety.rules.nested_statements import nested_statements
from gateway.safety.rules.recursion import recursion
from gateway.safety.rules.regex import regex
from gateway.safety.rules.rows import rows
from gateway.safety.rules.sqlglot_agrees import sqlglot_agrees

Rule = Callable[[Context, Policy], Iterable[Finding]]

RULES: tuple[Rule, ...] = (
    nested_statements,
    functions,
    generate_series,
    amplification,
    rows,
    regex,
    catalogs,
    hidden,
    complexity,
    cartesian,
    recursion,
    sqlglot_agrees,  # last: it only adds what Postgres's tree did not already show
)
