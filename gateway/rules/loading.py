"""Read rule files into a :class:`RuleSet`, with every problem tied to a file and line.

YAML is composed first (nodes keep their line marks), so a pydantic error on ``tables.orders.columns.x``
points at the line where that key is written. Several files for one database (``rules/<db>/*.yaml``) are
merged; the same table, column description or condition name defined twice is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gateway.rules.conditions import parse_predicate
from gateway.rules.model import (
    RequiredCondition,
    ResultCheck,
    RuleFileModel,
    RuleLimitsSet,
    RuleSet,
)
from gateway.rules.row_filters import RowFilter, parse_row_filter

SUFFIXES = (".yaml", ".yml")
Path_ = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class RuleProblem:
    """Something wrong in a rule file; ``line`` is 1-based (0 when the whole file is at fault)."""

    file: str
    line: int
    message: str
    severity: str = "error"  # 'error' | 'warning'

    def __str__(self) -> str:
        prefix = "" if self.severity == "error" else f"{self.severity}: "
        return f"{self.file}:{self.line}: {prefix}{self.message}"


def rule_files(rules_dir: Path, database: str) -> list[Path]:
    """``rules/<database>.yaml`` (or .yml) and ``rules/<database>/*.yaml``, in a stable order."""
    files = [rules_dir / f"{database}{suffix}" for suffix in SUFFIXES]
    found = [f for f in files if f.is_file()]
    folder = rules_dir / database
    if folder.is_dir():
        found += sorted(f for f in folder.iterdir() if f.suffix in SUFFIXES and f.is_file())
    return found


def databases_with_rules(rules_dir: Path) -> list[str]:
    if not rules_dir.is_dir():
        return []
    names = {p.stem for p in rules_dir.iterdir() if p.is_file() and p.suffix in SUFFIXES}
    names |= {p.name for p in rules_dir.iterdir() if p.is_dir() and not p.name.startswith(".")}
    return sorted(names)


@dataclass(slots=True)
class ParsedFile:
    path: Path
    model: RuleFileModel
    lines: dict[Path_, int]

    def line(self, *path: str | int) -> int:
        return _line_for(self.lines, path)


# A file with no YAML document at all. On its own it defines no rules (a warning); the registry treats it as
# an error when it replaced a file that held rules, since that is what a half-written file looks like.
EMPTY_FILE = "the file is empty or holds only comments: it defines no rules"


def parse_file(path: Path, text: str | None = None) -> tuple[ParsedFile | None, list[RuleProblem]]:
    """One file, validated; (None, problems) when it cannot be used. ``text``: its content, already read."""
    where = str(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return None, [RuleProblem(where, 0, f"cannot read the file: {exc}")]
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return None, [RuleProblem(where, mark.line + 1 if mark else 0, f"invalid YAML: {exc.problem or exc}")]
    except yaml.YAMLError as exc:
        return None, [RuleProblem(where, 0, f"invalid YAML: {exc}")]
    lines: dict[Path_, int] = {(): 1}
    problems: list[RuleProblem] = []
    if node is not None:
        _collect_lines(node, (), lines, problems, where)
    if data is None:
        problems.append(RuleProblem(where, 0, EMPTY_FILE, severity="warning"))
        data = {}
    if not isinstance(data, dict):
        return None, [RuleProblem(where, 1, "a rule file must be a mapping (tables:, instructions:, ...)")]
    try:
        model = RuleFileModel.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            problems.append(RuleProblem(where, _line_for(lines, err["loc"]), _describe(err)))
        return None, problems
    parsed = ParsedFile(path, model, lines)
    for i, cond in enumerate(model.required_conditions):
        try:
            parse_predicate(cond.sql)
        except ValueError as exc:
            problems.append(RuleProblem(where, parsed.line("required_conditions", i, "sql"),
                                        f"required condition {cond.name!r}: {exc}"))
    for table, rule in model.tables.items():
        if rule.row_filter is not None:
            try:
                parse_row_filter(table, rule.row_filter)
            except ValueError as exc:
                problems.append(RuleProblem(where, parsed.line("tables", table, "row_filter"),
                                            f"row filter of {table}: {exc}"))
    return (None if any(p.severity == "error" for p in problems) else parsed), problems


def load_ruleset(database: str, files: list[Path],
                 texts: dict[Path, str] | None = None) -> tuple[RuleSet, list[RuleProblem]]:
    """Merge the files for one database; the RuleSet is only meaningful when there are no errors.

    ``texts``: the files' contents as already read (the registry reads them once, consistently); files
    missing from it are read here.
    """
    parsed: list[ParsedFile] = []
    problems: list[RuleProblem] = []
    for path in files:
        one, found = parse_file(path, (texts or {}).get(path))
        problems += found
        if one is not None:
            parsed.append(one)
    ruleset, merge_problems = _merge(database, parsed)
    return ruleset, problems + merge_problems


def salvage_hidden(database: str, files: list[Path]) -> RuleSet:
    """Only the hidden tables and columns that broken files still name (used when nothing loaded yet)."""
    tables: set[str] = set()
    columns: set[str] = set()
    filters: dict[str, RowFilter] = {}
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        entries = data.get("tables") if isinstance(data, dict) else None
        for table, rule in (entries or {}).items() if isinstance(entries, dict) else ():
            if not isinstance(rule, dict):
                continue
            if rule.get("hidden") is True:
                tables.add(str(table).lower())
            if "row_filter" in rule:
                # A filter the broken file still holds stays in force; one that does not parse hides its
                # table: never read unfiltered because a file is half-written.
                try:
                    filters[str(table).lower()] = parse_row_filter(str(table), str(rule["row_filter"]), str(path))
                except ValueError:
                    tables.add(str(table).lower())
            cols = rule.get("columns")
            for column, crule in (cols or {}).items() if isinstance(cols, dict) else ():
                if isinstance(crule, dict) and crule.get("hidden") is True:
                    columns.add(f"{str(table).lower()}.{str(column).lower()}")
    return RuleSet(database=database, sources=tuple(files), hidden_tables=frozenset(tables),
                   hidden_columns=frozenset(columns), row_filters=filters)


def _merge(database: str, parsed: list[ParsedFile]) -> tuple[RuleSet, list[RuleProblem]]:
    problems: list[RuleProblem] = []
    tables: dict[str, str] = {}
    columns: dict[str, str] = {}
    defined_at: dict[str, str] = {}
    hidden_tables: set[str] = set()
    hidden_columns: set[str] = set()
    shown_tables: set[str] = set()
    shown_columns: set[str] = set()
    instructions: list[str] = []
    functions: set[str] = set()
    limits: dict[str, int] = {}
    conditions: list[RequiredCondition] = []
    checks: list[ResultCheck] = []
    names: dict[str, str] = {}
    row_filters: dict[str, RowFilter] = {}

    def once(key: str, pf: ParsedFile, line: int, what: str) -> bool:
        here = f"{pf.path}:{line}"
        if key in defined_at:
            problems.append(RuleProblem(str(pf.path), line, f"{what} is already defined at {defined_at[key]}"))
            return False
        defined_at[key] = here
        return True

    for pf in parsed:
        m = pf.model
        for table, rule in m.tables.items():
            tkey = table.lower()
            if rule.description and once(f"t:{tkey}", pf, pf.line("tables", table), f"table {table}"):
                tables[tkey] = rule.description.strip()
            if rule.row_filter is not None:
                line = pf.line("tables", table, "row_filter")
                if once(f"f:{tkey}", pf, line, f"the row filter of {table}"):
                    row_filters[tkey] = parse_row_filter(tkey, rule.row_filter, str(pf.path), line)
            if rule.hidden:
                hidden_tables.add(tkey)
            elif rule.hidden is False:
                shown_tables.add(tkey)
            for column, crule in rule.columns.items():
                ckey = f"{tkey}.{column.lower()}"
                line = pf.line("tables", table, "columns", column)
                if crule.description and once(f"c:{ckey}", pf, line, f"column {table}.{column}"):
                    columns[ckey] = crule.description.strip()
                if crule.hidden:
                    hidden_columns.add(ckey)
                elif crule.hidden is False:
                    shown_columns.add(ckey)
        instructions += [i.strip() for i in m.instructions]
        functions |= {f.lower() for f in m.extra_functions}
        for key in ("max_rows", "max_joins", "max_subquery_depth"):
            value = getattr(m.limits, key)
            if value is not None:
                if key in limits and limits[key] != value:
                    problems.append(RuleProblem(str(pf.path), pf.line("limits", key),
                                                f"limits.{key} is already set to {limits[key]} in another file"))
                limits[key] = value
        for i, cond in enumerate(m.required_conditions):
            line = pf.line("required_conditions", i)
            if not _claim(names, problems, cond.name, str(pf.path), line):
                continue
            conditions.append(RequiredCondition(cond.name, cond.applies_to.lower(), cond.sql,
                                                cond.message or f"queries on {cond.applies_to} must satisfy "
                                                f"{cond.sql}", str(pf.path), line))
        for i, check in enumerate(m.result_checks):
            line = pf.line("result_checks", i)
            if not _claim(names, problems, check.name, str(pf.path), line):
                continue
            checks.append(ResultCheck(check.name, check.column, check.min, check.max, check.not_null,
                                      check.message))
    ruleset = RuleSet(
        database=database,
        sources=tuple(pf.path for pf in parsed),
        table_descriptions=tables,
        column_descriptions=columns,
        instructions=instructions,
        hidden_tables=frozenset(hidden_tables),
        hidden_columns=frozenset(hidden_columns),
        shown_tables=frozenset(shown_tables - hidden_tables),
        shown_columns=frozenset(shown_columns - hidden_columns),
        extra_functions=frozenset(functions),
        limits=RuleLimitsSet(**limits),
        required_conditions=conditions,
        result_checks=checks,
        row_filters=row_filters,
    )
    return ruleset, problems


def _collect_lines(node: yaml.Node, path: Path_, lines: dict[Path_, int], problems: list[RuleProblem],
                   where: str) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            if key in seen:
                # PyYAML keeps the last value silently; a DBA would not expect that.
                problems.append(RuleProblem(where, key_node.start_mark.line + 1, f"duplicate key {key!r}"))
            seen.add(key)
            _collect_lines(value_node, path + (key,), lines, problems, where)
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_lines(item, path + (index,), lines, problems, where)


def _line_for(lines: dict[Path_, int], loc: tuple[Any, ...] | list[Any]) -> int:
    """The line of the deepest YAML node on ``loc`` (pydantic may add steps the YAML lacks)."""
    path: Path_ = ()
    for step in loc:
        if path + (step,) in lines:
            path = path + (step,)
    return lines.get(path, 1)


def _describe(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown key {where!r}"
    return f"{where}: {err['msg']}" if where else err["msg"]


def _claim(names: dict[str, str], problems: list[RuleProblem], name: str, path: str, line: int) -> bool:
    """Record a rule name at ``path:line``; False, with a problem, when another rule already has it."""
    if name in names:
        problems.append(RuleProblem(path, line, f"a rule named {name!r} is already defined at {names[name]}"))
        return False
    names[name] = f"{path}:{line}"
    return True
