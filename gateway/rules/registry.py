"""Rule sets per database, reloaded when their files change, without a restart; a reload fails closed.

:meth:`RulesRegistry.get` stats the database's rule files and reloads when a file was added, removed or
changed; it does so only when the rules directory's :class:`~gateway.rules.watch.Watch` saw a change
(inotify, so the next request sees it) or a second has passed (what no event reports), not on every request.
What a reload may never do is lower protection by accident:

- A file that no longer loads (invalid YAML or keys, unreadable) keeps the last good rule set in force.
- A file that is empty or holds only comments, where it held rules before, is what a half-written file
  looks like (``: > rules/demo.yaml``, an editor that truncates before writing): also an error.
- Reading is consistent: every file is read twice with a ``stat`` before and after; a file that changed
  meanwhile is read again (a few times), and a reload that never sees a stable file keeps the last good set.
- Hidden tables and columns are sticky: once hidden in this process, a name stays hidden until a file says
  ``hidden: false`` for it. A hidden entry that merely disappeared (a truncated file can still be valid
  YAML, cut before ``employees:``) stays hidden, with an error log line. A restart reads the files as they
  are, so removing the entry and restarting also un-hides it.

Each failure logs ``rules_reload_failed`` (or ``rules_hidden_kept``) once per change and counts in
``nl2sql_rules_reload_errors_total{database,reason}``; serving goes on with the last good rules.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.rules.loading import EMPTY_FILE, RuleProblem, load_ruleset, rule_files, salvage_hidden
from gateway.rules.model import RuleSet
from gateway.rules.watch import Watch
from gateway.safety.policy import Policy

log = get_logger(__name__)

Signature = tuple[tuple[str, int, int, int], ...]

# How often a reload reads files that keep changing under it before it gives up (keeping the last good set).
READ_ATTEMPTS = 5


class RulesRegistry:
    """The DBA's rules for each database, read from ``rules_dir``."""

    def __init__(self, rules_dir: Path) -> None:
        self.rules_dir = Path(rules_dir)
        self._sets: dict[str, RuleSet] = {}
        self._signatures: dict[str, Signature] = {}
        self._problems: dict[str, list[RuleProblem]] = {}
        self._policies: dict[str, tuple[RuleSet, Policy, Policy]] = {}
        self._had_rules: dict[str, set[Path]] = {}  # files that held a rule document in a good load
        self._watch = Watch(self.rules_dir)
        self._checked: dict[str, int] = {}  # the watch's generation when each database's files were last statted
        self._empty: dict[str, RuleSet] = {}  # one empty rule set per database without rule files

    def get(self, database: str) -> RuleSet:
        """The rule set in force for ``database`` (empty when it has no rule file)."""
        generation = self._watch.generation()  # before the stat: a change from now on moves it again
        if self._checked.get(database) != generation:
            files = rule_files(self.rules_dir, database)
            signature = _signature(files)
            if self._signatures.get(database) != signature:
                self._signatures[database] = signature
                self._reload(database, files)
            self._checked[database] = generation
        found = self._sets.get(database)
        if found is None:  # the same empty object each time, so policy_for's memo holds
            found = self._empty.get(database)
            if found is None:
                found = self._empty[database] = RuleSet(database=database)
        return found

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
        texts, problems = _read_consistently(files)
        if texts is not None:
            ruleset, found = load_ruleset(database, [f for f in files if f in texts], texts)
            problems += [self._emptied(database, p) for p in found]
        self._problems[database] = problems
        errors = [p for p in problems if p.severity == "error"]
        kept = self._sets.get(database)
        if texts is None or errors:
            if kept is None:
                # Nothing good to fall back on: fail closed for what matters most and keep hiding
                # whatever the broken files still say is hidden.
                self._sets[database] = kept = salvage_hidden(database, files)
            reason = "unstable" if texts is None else "empty" if any(
                p.message.startswith(EMPTY_FILE) for p in errors) else "invalid"
            metrics.RULES_RELOAD_ERRORS.labels(database, reason).inc()
            log.error("rules_reload_failed", database=database, reason=reason,
                      problems=[str(p) for p in errors], kept=[str(s) for s in kept.sources])
            return
        if kept is not None:
            ruleset = self._keep_hidden(database, kept, ruleset)
        self._sets[database] = ruleset
        self._had_rules[database] = {p for p in files if texts.get(p) is not None and not any(
            q.file == str(p) and q.message == EMPTY_FILE for q in problems)}
        log.info("rules_loaded", database=database, files=[str(f) for f in files],
                 hidden_tables=len(ruleset.hidden_tables), hidden_columns=len(ruleset.hidden_columns),
                 instructions=len(ruleset.instructions), required_conditions=len(ruleset.required_conditions))

    def _emptied(self, database: str, problem: RuleProblem) -> RuleProblem:
        """An empty file where a good load found rules is an error, not "no rules"."""
        if problem.message == EMPTY_FILE and Path(problem.file) in self._had_rules.get(database, ()):
            return replace(problem, severity="error", message=f"{EMPTY_FILE}, but it held rules before (a "
                           "half-written file?); the last good rules stay in force. To drop every rule of "
                           "this database, delete the file")
        return problem

    def _keep_hidden(self, database: str, kept: RuleSet, new: RuleSet) -> RuleSet:
        """``new`` with every name ``kept`` hid still hidden, unless ``new`` says ``hidden: false`` for it."""
        tables = kept.hidden_tables - new.hidden_tables - new.shown_tables
        columns = kept.hidden_columns - new.hidden_columns - new.shown_columns
        if not tables and not columns:
            return new
        metrics.RULES_RELOAD_ERRORS.labels(database, "hidden_removed").inc()
        # Counts, not names: hidden names stay out of log lines (`rules check` and the files name them).
        log.error("rules_hidden_kept", database=database, tables=len(tables), columns=len(columns),
                  why="hidden entries disappeared from the rule files; they stay hidden until a file says "
                      "`hidden: false` for them (or the gateway restarts)")
        return replace(new, hidden_tables=new.hidden_tables | tables, hidden_columns=new.hidden_columns | columns)


def _read_consistently(files: list[Path]) -> tuple[dict[Path, str] | None, list[RuleProblem]]:
    """Every file's text as one stable snapshot; (None, []) when the files kept changing while read.

    A file is taken when two reads with a ``stat`` before and after agree (same mtime, size, inode and
    content hash): a writer caught in the middle makes them differ, and the file is read again.
    """
    for _ in range(READ_ATTEMPTS):
        before = _signature(files)
        texts: dict[Path, str] = {}
        problems: list[RuleProblem] = []
        digests = []
        for path in files:
            try:
                raw = path.read_bytes()
            except OSError as exc:
                problems.append(RuleProblem(str(path), 0, f"cannot read the file: {exc}"))
                raw = b""
            else:
                try:
                    texts[path] = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(RuleProblem(str(path), 0, f"cannot read the file: {exc}"))
            digests.append(hashlib.sha256(raw).digest())
        again = []
        for path in files:
            try:
                again.append(hashlib.sha256(path.read_bytes()).digest())
            except OSError:
                again.append(b"")
        if _signature(files) == before and again == digests:
            return texts, problems
    return None, []


def _signature(files: list[Path]) -> Signature:
    out = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append((str(path), st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)
