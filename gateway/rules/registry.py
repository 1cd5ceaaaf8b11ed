"""Rule sets per database, reloaded when their files change, without a restart; a load fails closed.

:meth:`RulesRegistry.get` stats the database's rule files and reloads when a file was added, removed or
changed; it does so only when the rules directory's :class:`~gateway.rules.watch.Watch` saw a change
(inotify, so the next request sees it) or a second has passed (what no event reports), not on every request.
What a load may never do is lower protection by accident, in a live process or a fresh one:

- A file that does not load (invalid YAML or keys, unreadable), a directory or a link to nothing where a
  rule file would be, or a file that is empty or holds only comments (what ``: > rules/demo.yaml`` or a
  half-written file looks like) keeps the last good rule set in force, every part of it. Only a database
  configured with ``rules = "none"`` reads an empty file as "no rules".
- A file that held rules in the last good load and is now gone (or the whole rules folder) is not "no
  rules" either: the last good set stays, instructions, limits and required conditions included. Unless
  the database is configured with ``rules = "none"``: then its rules are gone on purpose.
- The last good set is saved on disk (:mod:`gateway.rules.last_good`, ``rules_state_dir``), so a fresh
  process (a worker the supervisor respawned, a restarted replica) starts from it when the files are
  broken. With nothing saved either, the database is not served: :meth:`get` raises
  :class:`~gateway.errors.RulesUnavailable` and :meth:`status` says why, for ``/readyz``. A database with
  ``rules = "required"`` and no rule file at all is not served the same way.
- Reading is consistent: every file is read twice with a ``stat`` before and after; a file that changed
  meanwhile is read again (a few times), and a reload that never sees a stable file keeps the last good set.
- Hidden tables and columns are sticky: once hidden (in this process or in the saved set), a name stays
  hidden until a file says ``hidden: false`` for it. A hidden entry that merely disappeared (a truncated
  file can still be valid YAML, cut before ``employees:``) stays hidden, with an error log line.

Each failure logs ``rules_reload_failed`` (with ``serving``: the last good set from memory, the saved one,
or nothing) once per change and counts in ``nl2sql_rules_reload_errors_total{database,reason}``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import yaml

from gateway import errors
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.rules import last_good
from gateway.rules.loading import EMPTY_FILE, RuleProblem, broken_entries, load_ruleset, rule_files
from gateway.rules.model import RuleSet
from gateway.rules.watch import Watch
from gateway.safety.policy import Policy

log = get_logger(__name__)

Signature = tuple[tuple[str, int, int, int], ...]
Mode = Literal["auto", "required", "none"]

# How often a reload reads files that keep changing under it before it gives up (keeping the last good set).
READ_ATTEMPTS = 5

# Why a load failed, in words that name no path and no hidden name (``/readyz`` is public).
REASONS = {
    "empty": "a rule file is empty or holds only comments",
    "invalid": "a rule file cannot be read as rules (invalid, unreadable, a directory or a link to nothing)",
    "unstable": "the rule files kept changing while they were read",
    "missing": "a rule file that held rules is gone",
    "folder_missing": "the rules folder is missing",
    "required": "it has no rule file and is configured with rules = \"required\"",
    "state_unreadable": "the saved last good rules cannot be read",
}


@dataclass(frozen=True, slots=True)
class RulesStatus:
    """How a database's rules stand: ``ok``, ``last_good`` (the files do not load; the last good set is
    served) or ``unavailable`` (not served). ``reason``: a key of :data:`REASONS`."""

    state: Literal["ok", "last_good", "unavailable"] = "ok"
    reason: str = ""

    @property
    def detail(self) -> str:
        why = REASONS.get(self.reason, self.reason)
        if self.state == "last_good":
            return f"{why}; the last good rules stay in force until the files are fixed"
        if self.state == "unavailable":
            return f"not served: {why}, and no earlier good set of its rules was saved"
        return "ok"


OK = RulesStatus()


class RulesRegistry:
    """The DBA's rules for each database, read from ``rules_dir``.

    ``modes``: each database's ``rules`` setting (``auto`` when absent); ``state_dir``: where the last good
    sets are saved (None: nowhere, for one-off tools such as ``rules check``)."""

    def __init__(self, rules_dir: Path, *, modes: Mapping[str, Mode] | None = None,
                 state_dir: Path | None = None) -> None:
        self.rules_dir = Path(rules_dir)
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self._modes = dict(modes or {})
        self._sets: dict[str, RuleSet] = {}
        self._status: dict[str, RulesStatus] = {}
        self._signatures: dict[str, tuple[object, ...]] = {}
        self._problems: dict[str, list[RuleProblem]] = {}
        self._policies: dict[str, tuple[RuleSet, Policy, Policy]] = {}
        self._expected: dict[str, set[str]] = {}  # files (relative) that held rules in the last good load
        self._saved: dict[str, tuple[RuleSet, list[str]] | None | last_good.Unreadable] = {}
        self._watch = Watch(self.rules_dir)
        self._checked: dict[str, int] = {}  # the watch's generation when each database's files were last statted
        self._empty: dict[str, RuleSet] = {}  # one empty rule set per database without rule files

    def get(self, database: str) -> RuleSet:
        """The rule set in force for ``database`` (empty when it has no rule file); raises
        :class:`~gateway.errors.RulesUnavailable` when the database is not served (see :meth:`status`)."""
        found = self._current(database)
        if found is None:
            status = self._status.get(database, OK)
            raise errors.RulesUnavailable(f"database {database!r} is {status.detail}", database=database,
                                          reason=status.reason)
        return found

    def status(self, database: str) -> RulesStatus:
        """Whether ``database``'s rules are served as the files say, from the last good set, or not at all."""
        self._current(database)
        return self._status.get(database, OK)

    def _current(self, database: str) -> RuleSet | None:
        generation = self._watch.generation()  # before the stat: a change from now on moves it again
        if self._checked.get(database) != generation:
            files = rule_files(self.rules_dir, database)
            broken = broken_entries(self.rules_dir, database)
            signature = (_signature(files), tuple(p.file for p in broken), self.rules_dir.is_dir())
            if self._signatures.get(database) != signature:
                self._signatures[database] = signature
                self._reload(database, files, broken)
            self._checked[database] = generation
        if self._status.get(database, OK).state == "unavailable":
            return None
        found = self._sets.get(database)
        if found is None:  # the same empty object each time, so policy_for's memo holds
            found = self._empty.get(database)
            if found is None:
                found = self._empty[database] = RuleSet(database=database)
        return found

    def problems(self, database: str) -> list[RuleProblem]:
        """Problems of the last load attempt (the rule set in force may be an older, good one)."""
        self._current(database)
        return list(self._problems.get(database, ()))

    def policy_for(self, database: str, base: Policy) -> Policy:
        """``base`` plus what the rules add: hidden tables and columns, extra functions, tighter limits."""
        rules = self.get(database)
        # Memoized per (rule set, base): the same object comes back until either changes, which lets the
        # SQL path cache verdicts per policy (gateway.sql.client) instead of re-checking repeated SQL.
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

    def _saved_set(self, database: str) -> tuple[RuleSet, list[str]] | None | last_good.Unreadable:
        """The saved last good set, read once per process (later good loads keep it up to date here)."""
        if database not in self._saved:
            found: tuple[RuleSet, list[str]] | None | last_good.Unreadable = None
            if self.state_dir is not None:
                try:
                    found = last_good.load(self.state_dir, database)
                except last_good.Unreadable as exc:
                    log.error("rules_last_good_unreadable", database=database, error=str(exc))
                    found = exc
            self._saved[database] = found
        return self._saved[database]

    def _reload(self, database: str, files: list[Path], broken: list[RuleProblem]) -> None:
        mode = self._modes.get(database, "auto")
        saved = self._saved_set(database)
        kept = self._sets.get(database)
        if database not in self._expected and isinstance(saved, tuple):
            self._expected[database] = set(saved[1])
        expected = self._expected.get(database, set())
        texts, problems = _read_consistently(files)
        problems = broken + problems
        if texts is not None:
            ruleset, found = load_ruleset(database, [f for f in files if f in texts], texts)
            problems += [self._emptied(p, mode, expected) for p in found]
        folder_missing = not self.rules_dir.is_dir()
        vanished = [] if mode == "none" else sorted(expected - {self._relative(f) for f in files})
        problems += [RuleProblem(str(self.rules_dir / name), 0, "this file held rules and is gone; the last "
                                 "good rules stay in force. To drop them on purpose, first make the file hold "
                                 "`{}` (or set rules = \"none\" for the database)") for name in vanished]
        self._problems[database] = problems
        errors_ = [p for p in problems if p.severity == "error"]
        if texts is None or errors_:
            reason = ("unstable" if texts is None else "empty" if any(
                p.message.startswith(EMPTY_FILE) for p in errors_) else "invalid" if len(errors_) > len(vanished)
                else "folder_missing" if folder_missing else "missing")
            self._fail(database, reason, kept, saved, [str(p) for p in errors_])
            return
        if not files:
            self._no_files(database, mode, kept, saved, folder_missing)
            return
        base = kept if kept is not None else saved[0] if isinstance(saved, tuple) else None
        if base is not None:
            ruleset = self._keep_hidden(database, base, ruleset)
        held = [self._relative(p) for p in files if _holds_rules(texts.get(p))]
        self._sets[database] = ruleset
        self._status[database] = OK
        self._expected[database] = set(held)
        log.info("rules_loaded", database=database, files=[str(f) for f in files],
                 hidden_tables=len(ruleset.hidden_tables), hidden_columns=len(ruleset.hidden_columns),
                 instructions=len(ruleset.instructions), required_conditions=len(ruleset.required_conditions))
        self._save(database, ruleset, held)

    def _fail(self, database: str, reason: str, kept: RuleSet | None,
              saved: tuple[RuleSet, list[str]] | None | last_good.Unreadable, problems: list[str]) -> None:
        """Keep the last good set (from memory, else the saved one), or serve nothing at all."""
        if kept is not None:
            serving = "last_good_in_memory"
            self._status[database] = RulesStatus("last_good", reason)
        elif isinstance(saved, tuple):
            serving = "last_good_saved"
            self._sets[database] = saved[0]
            self._status[database] = RulesStatus("last_good", reason)
        else:
            serving = "nothing"
            if isinstance(saved, last_good.Unreadable) and reason in ("missing", "folder_missing"):
                reason = "state_unreadable"
            self._status[database] = RulesStatus("unavailable", reason)
        metrics.RULES_RELOAD_ERRORS.labels(database, reason).inc()
        log.error("rules_reload_failed", database=database, reason=reason, problems=problems, serving=serving,
                  why=self._status[database].detail)

    def _no_files(self, database: str, mode: Mode, kept: RuleSet | None,
                  saved: tuple[RuleSet, list[str]] | None | last_good.Unreadable, folder_missing: bool) -> None:
        """No rule file for ``database`` and none that held rules is missing."""
        if mode == "none":  # declared to have no rules: whatever was saved is gone on purpose
            self._sets.pop(database, None)
            self._status[database] = OK
            self._expected[database] = set()
            if self.state_dir is not None and last_good.forget(self.state_dir, database):
                log.warning("rules_last_good_forgotten", database=database,
                            why='the database is configured with rules = "none" and has no rule file')
            self._saved[database] = None
            return
        if mode == "required":
            self._fail(database, "required" if not folder_missing else "folder_missing", kept, saved,
                       [f"no rule file for {database!r} in {self.rules_dir}"])
            return
        if isinstance(saved, last_good.Unreadable):  # files held rules once, maybe: cannot tell
            self._fail(database, "state_unreadable", kept, None, [str(saved)])
            return
        if kept is not None and (kept.hidden_tables or kept.hidden_columns or kept.row_filters):
            # `{}` files removed after they emptied the set: hidden names stay hidden, as on any reload.
            self._sets[database] = self._keep_hidden(database, kept, RuleSet(database=database))
        else:
            self._sets.pop(database, None)
        self._status[database] = OK

    def _save(self, database: str, ruleset: RuleSet, held: list[str]) -> None:
        if self.state_dir is None:
            return
        try:
            last_good.save(self.state_dir, database, ruleset, held)
        except OSError as exc:
            metrics.RULES_RELOAD_ERRORS.labels(database, "not_saved").inc()
            log.error("rules_last_good_not_saved", database=database, state_dir=str(self.state_dir),
                      error=str(exc), effect="a fresh process whose rule files are broken will not serve "
                      "this database (set rules_state_dir to a writable folder)")
            return
        self._saved[database] = (ruleset, held)

    def _relative(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.rules_dir))
        except ValueError:
            return str(path)

    def _emptied(self, problem: RuleProblem, mode: Mode, expected: set[str]) -> RuleProblem:
        """An empty file is an error (a half-written file looks like that), unless the database has no rules
        by configuration (``rules = "none"``)."""
        if problem.message != EMPTY_FILE or mode == "none":
            return problem
        if self._relative(Path(problem.file)) in expected:
            why = ("but it held rules before (a half-written file?); the last good rules stay in force. To drop "
                   "every rule of this database, set rules = \"none\" for it")
        else:
            why = ("where a rule file is expected; write `{}` for a file without rules, or set rules = \"none\" "
                   "for a database that has none")
        return replace(problem, severity="error", message=f"{EMPTY_FILE}, {why}")

    def _keep_hidden(self, database: str, kept: RuleSet, new: RuleSet) -> RuleSet:
        """``new`` with every name ``kept`` hid still hidden, unless ``new`` says ``hidden: false`` for it, and
        every row filter ``kept`` had still in force, unless ``new`` says ``row_filter: false`` for its table."""
        tables = kept.hidden_tables - new.hidden_tables - new.shown_tables
        columns = kept.hidden_columns - new.hidden_columns - new.shown_columns
        filters = {t: f for t, f in kept.row_filters.items()
                   if t not in new.row_filters and t not in new.unfiltered_tables}
        if not tables and not columns and not filters:
            return new
        metrics.RULES_RELOAD_ERRORS.labels(database, "hidden_removed").inc()
        # Counts, not names: hidden names stay out of log lines (`rules check` and the files name them).
        log.error("rules_hidden_kept", database=database, tables=len(tables), columns=len(columns),
                  row_filters=len(filters),
                  why="hidden entries or row filters disappeared from the rule files; they stay in force until "
                      "a file says `hidden: false` or `row_filter: false` for them")
        return replace(new, hidden_tables=new.hidden_tables | tables, hidden_columns=new.hidden_columns | columns,
                       row_filters={**new.row_filters, **filters})


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


def _holds_rules(text: str | None) -> bool:
    """Whether a file's text says anything (``{}`` says nothing: a file may then be deleted freely)."""
    try:
        return bool(yaml.safe_load(text or ""))
    except yaml.YAMLError:
        return True
