"""Read native semantic model files into a :class:`SemanticModel`, every problem tied to a file and line.

Where the files are: ``semantic/<database>.yaml`` and ``semantic/<database>/*.yaml`` (the ``semantic_dir``
setting, a folder beside ``rules/``), found, composed and line-marked with the rule files' own machinery
(:mod:`gateway.rules.loading`), so the two kinds of file behave alike. Several files for one database are
merged; an entity or metric defined twice is an error. Beyond the keys and types, a model must hang
together: relationships point at entities, metrics at measures and metrics (without cycles), dimension
names are unique, every SQL fragment parses.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlglot
import yaml
from pydantic import ValidationError
from sqlglot import exp

from gateway.rules.loading import (
    EMPTY_FILE,
    Path_,
    RuleProblem,
    _collect_lines,
    _describe,
    _line_for,
)
from gateway.rules.loading import broken_entries as broken_entries
from gateway.rules.loading import rule_files as model_files
from gateway.semantic.model import GRAINS, SemanticModel

SemanticProblem = RuleProblem

__all__ = ["SemanticProblem", "broken_entries", "load_model", "load_with_lines", "model_files", "parse_text",
           "validate"]


def parse_text(text: str, where: str) -> tuple[SemanticModel | None, dict[Path_, int], list[SemanticProblem]]:
    """One file's text as a model (not yet checked for coherence), its line marks, and its problems."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return None, {}, [SemanticProblem(where, mark.line + 1 if mark else 0, f"invalid YAML: {exc.problem or exc}")]
    except yaml.YAMLError as exc:
        return None, {}, [SemanticProblem(where, 0, f"invalid YAML: {exc}")]
    lines: dict[Path_, int] = {(): 1}
    problems: list[SemanticProblem] = []
    if node is not None:
        _collect_lines(node, (), lines, problems, where)
    if data is None:
        problems.append(SemanticProblem(where, 0, EMPTY_FILE.replace("rules", "semantic model"), "warning"))
        data = {}
    if not isinstance(data, dict):
        return None, lines, [SemanticProblem(where, 1, "a semantic model file must be a mapping (entities:, "
                                                       "metrics:, ...)")]
    try:
        model = SemanticModel.model_validate(data)
    except ValidationError as exc:
        problems += [SemanticProblem(where, _line_for(lines, err["loc"]), _describe(err)) for err in exc.errors()]
        return None, lines, problems
    return model, lines, problems


def load_model(files: list[Path], texts: dict[Path, str] | None = None) -> tuple[SemanticModel,
                                                                                  list[SemanticProblem]]:
    """Merge and check the files of one database; the model is only meaningful when no problem is an error."""
    model, problems, _ = load_with_lines(files, texts)
    return model, problems


Where = Callable[..., tuple[str, int]]


def load_with_lines(files: list[Path], texts: dict[Path, str] | None = None) -> tuple[SemanticModel,
                                                                                       list[SemanticProblem], Where]:
    """:func:`load_model`, and ``line(kind, name, *path)``: the file and line of a key (``"entities",
    "orders", "dimensions", "status"``), for later checks such as the one against the live schema."""
    problems: list[SemanticProblem] = []
    merged: dict[str, Any] = {"entities": {}, "metrics": {}, "default_filters": [], "verified_queries": []}
    origin: dict[tuple[str, str], tuple[str, dict[Path_, int], Path_]] = {}
    descriptions: list[str] = []
    for path in files:
        text = (texts or {}).get(path)
        if text is None:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(SemanticProblem(str(path), 0, f"cannot read the file: {exc}"))
                continue
        model, lines, found = parse_text(text, str(path))
        problems += found
        if model is None:
            continue
        if model.description:
            descriptions.append(model.description)
        for kind in ("entities", "metrics"):
            for name, value in getattr(model, kind).items():
                if (kind, name) in origin:
                    first = origin[(kind, name)]
                    problems.append(SemanticProblem(str(path), lines.get((kind, name), 1),
                                                    f"{kind[:-1].replace('entitie', 'entity')} {name!r} is "
                                                    f"already defined at {first[0]}:{first[1].get(first[2], 1)}"))
                    continue
                origin[(kind, name)] = (str(path), lines, (kind, name))
                merged[kind][name] = value
        for kind in ("default_filters", "verified_queries"):
            for i, value in enumerate(getattr(model, kind)):
                origin[(kind, f"{len(merged[kind])}")] = (str(path), lines, (kind, i))
                merged[kind].append(value)
    model = SemanticModel(description="\n".join(descriptions), **merged)

    def line(kind: str, name: str, *rest: str | int) -> tuple[str, int]:
        where, lines, base = origin.get((kind, name), ("?", {}, ()))
        return where, _line_for(lines, base + rest)

    problems += validate(model, line)
    return model, problems, line


def validate(model: SemanticModel, line: Any = None) -> list[SemanticProblem]:
    """What makes a well-formed model incoherent. ``line(kind, name, *path)`` gives (file, line) of a key."""

    def at(kind: str, name: str, *rest: str | int) -> tuple[str, int]:
        return line(kind, name, *rest) if line is not None else ("<model>", 0)

    problems: list[SemanticProblem] = []

    def problem(where: tuple[str, int], message: str) -> None:
        problems.append(SemanticProblem(where[0], where[1], message))

    dimension_owner: dict[str, str] = {}
    for ename, entity in model.entities.items():
        for i, rel in enumerate(entity.relationships):
            if rel.to not in model.entities:
                problem(at("entities", ename, "relationships", i, "to"),
                        f"entity {ename}: relationship to unknown entity {rel.to!r}")
        for dname, dim in entity.dimensions.items():
            where = at("entities", ename, "dimensions", dname)
            if dname in dimension_owner:
                problem(where, f"dimension {dname!r} is also defined on entity {dimension_owner[dname]!r}: "
                        "dimension names must be unique in a model")
            dimension_owner.setdefault(dname, ename)
            if dim.values and dim.type == "time":
                problem(where, f"dimension {dname!r}: a time dimension has no value synonyms")
            if dim.grains and dim.type != "time":
                problem(where, f"dimension {dname!r}: only a time dimension has grains")
            if dim.column is not None and not is_bare_column(dim.column):
                problem(where, f"dimension {dname!r}: column {dim.column!r} is not a plain column name")
        for mname, measure in entity.measures.items():
            error = _sql_error(measure.expr, "expression")
            if error:
                problem(at("entities", ename, "measures", mname, "expr"), f"measure {ename}.{mname}: {error}")
    for i, flt in enumerate(model.default_filters):
        where = at("default_filters", str(i), "sql")
        if flt.entity not in model.entities:
            problem(where, f"default filter {flt.name!r}: unknown entity {flt.entity!r}")
        error = _sql_error(flt.sql, "condition")
        if error:
            problem(where, f"default filter {flt.name!r}: {error}")
    for name, metric in model.metrics.items():
        if name in dimension_owner:
            problem(at("metrics", name), f"metric {name!r} has the name of a dimension")
        problems += _check_metric(model, name, metric, at("metrics", name))
    problems += _cycles(model, at)
    return problems


def _check_metric(model: SemanticModel, name: str, metric: Any, where: tuple[str, int]) -> list[SemanticProblem]:
    out: list[SemanticProblem] = []

    def bad(message: str) -> None:
        out.append(SemanticProblem(where[0], where[1], f"metric {name!r}: {message}"))

    needs = {"simple": ("measure",), "ratio": ("numerator", "denominator"), "derived": ("expr",)}[metric.type]
    for key in needs:
        if not getattr(metric, key):
            bad(f"a {metric.type} metric needs {key}")
    for key in ("measure", "filter", "numerator", "denominator", "expr"):
        if key not in needs and getattr(metric, key) and not (key == "filter" and metric.type == "simple"):
            bad(f"{key} does not apply to a {metric.type} metric")
    if metric.type == "simple" and metric.measure and model.measure(metric.measure) is None:
        bad(f"unknown measure {metric.measure!r} (write entity.measure)")
    if metric.filter:
        error = _sql_error(metric.filter, "condition")
        if error:
            bad(f"filter: {error}")
    for key in ("numerator", "denominator"):
        ref = getattr(metric, key) if metric.type == "ratio" else None
        if ref and ref not in model.metrics:
            bad(f"{key} {ref!r} is not a metric")
    if metric.type == "derived" and metric.expr:
        error = _sql_error(metric.expr, "expression")
        if error:
            bad(f"expr: {error}")
        else:
            for ref in metric_refs(metric.expr):
                if ref not in model.metrics:
                    bad(f"expr refers to {ref!r}, which is not a metric")
    return out


def metric_refs(expr: str) -> list[str]:
    """The names a derived metric's expression uses (each must be a metric)."""
    return sorted({c.name for c in sqlglot.parse_one(expr, read="postgres").find_all(exp.Column)})


def depends_on(model: SemanticModel, name: str) -> list[str]:
    metric = model.metrics[name]
    if metric.type == "ratio":
        return [m for m in (metric.numerator, metric.denominator) if m]
    if metric.type == "derived" and metric.expr:
        return metric_refs(metric.expr)
    return []


def _cycles(model: SemanticModel, at: Any) -> list[SemanticProblem]:
    problems: list[SemanticProblem] = []
    done: set[str] = set()

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in stack:
            where = at("metrics", name)
            problems.append(SemanticProblem(where[0], where[1], "metrics refer to each other in a cycle: "
                                            + " -> ".join(stack[stack.index(name):] + (name,))))
            return
        if name in done or name not in model.metrics:
            return
        try:
            refs = depends_on(model, name)
        except sqlglot.errors.ParseError:
            refs = []
        for ref in refs:
            visit(ref, stack + (name,))
        done.add(name)

    for name in model.metrics:
        visit(name, ())
    return problems


def is_bare_column(name: str) -> bool:
    """Whether an expression is one unqualified column (mapped as is) rather than SQL over several."""
    try:
        node = sqlglot.parse_one(name, read="postgres")
    except sqlglot.errors.ParseError:
        return False
    return isinstance(node, exp.Column) and not node.table


def _sql_error(text: str, what: str) -> str | None:
    """Why ``text`` is not one SQL expression (no subquery, no statement), or None."""
    try:
        node = sqlglot.parse_one(text, read="postgres")
    except sqlglot.errors.ParseError as exc:
        return f"not a SQL {what}: {str(exc).splitlines()[0]}"
    if node is None or not isinstance(node, exp.Expr) or isinstance(node, exp.Query | exp.Command):
        return f"not a SQL {what}: {text!r}"
    if node.find(exp.Query) is not None:
        return "a subquery is not allowed here"
    return None


GRAIN_NAMES = GRAINS
