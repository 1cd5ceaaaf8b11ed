"""Rule sets per database, reloaded when their files change, without a restart.

Every :meth:`RulesRegistry.get` stats the database's rule files (a few syscalls) and reloads when a file was
added, removed or changed. A file that no longer loads keeps the last good rule set in force and logs the
problems once per change, so a bad edit never takes serving down.
"""

from __future__ import annotations

import os
from pathlib import Path

from gateway.observability.logging import get_logger
from gateway.rules.loading import RuleProblem, load_ruleset, rule_files, salvage_hidden
from gateway.rules.model import RuleSet
from gateway.safety.policy import Policy

log = get_logger(__name__)

Signature = tuple[tuple[str, int, int, int], ...]


class RulesRegistry:
    """The DBA's rules for each database, read from ``rules_dir``."""

    def __init__(self, rules_dir: Path) -> None:
        self.rules_dir = Path(rules_dir)
        self._sets: dict[str, RuleSet] = {}
        self._signatures: dict[str, Signature] = {}
        self._problems: dict[str, list[RuleProblem]] = {}
        self._policies: dict[str, tuple[RuleSet, Policy, Policy]] = {}

    def get(self, database: str) -> RuleSet:
        """The rule set in force for ``database`` (empty when it has no rule file)."""
        files = rule_files(self.rules_dir, database)
        signature = _signature(files)
        if self._signatures.get(database) != signature:
            self._signatures[database] = signature
            self._reload(database, files)
        return self._sets.get(database) or RuleSet(database=database)

    def problems(self, database: str) -> list[RuleProblem]:
        """Problems of the last load attempt (the rule set in force may be an older, good one)."""
        self.get(database)
        return list(self._problems.get(database, ()))

    def policy_for(self, database: str, base: Policy) -> Policy:
        """``base`` plus what the rules add: hidden tables and columns, extra functions, tighter limits."""
        rules = self.get(database)
        # Memoized per (rule set, base): the same object comes back until either changes, which lets the
        # SQL path cache verdicts per policy (gateway.client_sql) instead of re-checking repeated SQL.
        memo = self._policies.get(database)
        if memo is not None and memo[0] is rules and memo[1] is base:
            return memo[2]
        policy = base.merged(hidden_tables=rules.hidden_tables, hidden_columns=rules.hidden_columns,
                             extra_functions=rules.extra_functions)
        tighter = {name: min(getattr(policy, name), value)
                   for name, value in (("max_joins", rules.limits.max_joins),
                                       ("max_subquery_depth", rules.limits.max_subquery_depth))
                   if value is not None}
        policy = policy.model_copy(update=tighter) if tighter else policy
        self._policies[database] = (rules, base, policy)
        return policy

    def _reload(self, database: str, files: list[Path]) -> None:
        ruleset, problems = load_ruleset(database, files)
        self._problems[database] = problems
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            kept = self._sets.get(database)
            if kept is None:
                # Nothing good to fall back on: fail closed for what matters most and keep hiding
                # whatever the broken files still say is hidden.
                self._sets[database] = kept = salvage_hidden(database, files)
            log.error("rules_reload_failed", database=database, problems=[str(p) for p in errors],
                      kept=[str(s) for s in kept.sources])
            return
        self._sets[database] = ruleset
        log.info("rules_loaded", database=database, files=[str(f) for f in files],
                 hidden_tables=len(ruleset.hidden_tables), hidden_columns=len(ruleset.hidden_columns),
                 instructions=len(ruleset.instructions), required_conditions=len(ruleset.required_conditions))


def _signature(files: list[Path]) -> Signature:
    out = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append((str(path), st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)
