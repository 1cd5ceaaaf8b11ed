"""Generated SQL against the semantic model: a column named as a metric must compute that metric.

When the outermost SELECT of an attempt returns a column whose name is a metric's name, label or synonym
(``revenue``, ``sales``, ``total_revenue`` is not one), its expression must match the definition:

- the aggregation (``sum``, ``count``/``count(*)``, ``count(DISTINCT ...)`` ...) and the measure expression
  over the metric's entity's table (qualifiers dropped, commutative spellings normalized by sqlglot);
- every conjunct of the metric's filter, found in the aggregate's own ``FILTER (WHERE ...)``, a
  ``CASE WHEN ... THEN x END`` inside it, the SELECT's WHERE or an inner join's ON (equivalent spellings
  count, as for the rules' required conditions: ``<>``, ``!=``, ``NOT IN``, a positive filter leaving the
  value out ...); a condition inside the aggregate that the definition lacks is a mismatch too;
- joins only along declared relationships from the metric's entity outwards (many-to-one): a join to a
  table the model has no relationship for, or one that multiplies the entity's rows (fan-out), is a mismatch
  unless the aggregate ignores duplicates (min, max, count distinct);
- ratio metrics: numerator / denominator each as above (``NULLIF(d, 0)``, casts and ``ROUND`` are fine), or
  ``avg(x)`` where the ratio is a sum of x over a row count with the same filter.

Derived metrics are not checked (their expression may be rewritten in too many equivalent ways); a column
computed from a derived table or CTE is followed into it by name. A required default filter is checked on
every read of its entity's table with the rules' machinery (:mod:`gateway.rules.conditions`). The findings
are ``metric_definition_mismatch`` and ``default_filter_missing``; each carries the definition, so a
reflection can write it. This module does no I/O.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from gateway.findings import Finding
from gateway.rules.conditions import _atom, _conjuncts, _implies, _normalize, missing_conditions
from gateway.rules.model import RequiredCondition
from gateway.semantic.compile import metric_sql
from gateway.semantic.model import Metric, SemanticModel

_AGGS: dict[type[exp.Expr], str] = {exp.Sum: "sum", exp.Count: "count", exp.Avg: "avg", exp.Min: "min",
                                    exp.Max: "max"}
_DUPLICATE_PROOF = {"min", "max", "count_distinct"}


def semantic_findings(model: SemanticModel, sql: str) -> list[Finding]:
    """The attempt's mismatches with ``model``; [] for SQL that does not parse (the safety check says why)."""
    if model.is_empty():
        return []
    findings: list[Finding] = []
    required = [RequiredCondition(f.name, model.entities[f.entity].table, f.sql, f.description)
                for f in model.default_filters if f.required and f.entity in model.entities]
    for condition in missing_conditions(sql, required):
        findings.append(Finding("default_filter_missing", f"the semantic model's default filter {condition.name!r} "
                                f"is missing: every read of {condition.applies_to} must carry {condition.sql}",
                                detail={"filter": condition.name, "sql": condition.sql}))
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except (SqlglotError, RecursionError):
        return findings
    if not isinstance(tree, exp.Select):
        return findings
    names = _metric_names(model)
    for projection in tree.expressions:
        column = projection.alias_or_name
        metric = names.get(_word(column))
        if metric is None:
            continue
        try:
            problem = _mismatch(model, metric, _unalias(projection), tree, tree)
        except (SqlglotError, RecursionError, KeyError):
            problem = None  # what cannot be read is not held against the model
        if problem:
            definition = metric_sql(model, metric).sql(dialect="postgres")
            findings.append(Finding(
                "metric_definition_mismatch",
                f"column {column} is the metric {metric!r}, defined as {definition} (joins only along "
                f"declared relationships), but {problem}",
                clause=column, detail={"metric": metric, "definition": definition}))
    return findings


def _word(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").split())


def _metric_names(model: SemanticModel) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, metric in model.metrics.items():
        for word in (name, metric.label, *metric.synonyms):
            if word:
                out.setdefault(_word(word), name)
    return out


def _unalias(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _strip(node: exp.Expr) -> exp.Expr:
    """Wrappers that do not change what is computed: parentheses, casts, ROUND(x, n), COALESCE(x, 0)."""
    while True:
        if isinstance(node, exp.Paren | exp.Cast | exp.TryCast):
            node = node.this
        elif isinstance(node, exp.Round):
            node = node.this
        elif isinstance(node, exp.Coalesce) and len(node.expressions) == 1:
            node = node.this
        elif isinstance(node, exp.Mul) and _is_one(node.expression):
            node = node.this
        elif isinstance(node, exp.Mul) and _is_one(node.this):
            node = node.expression
        else:
            return node


def _is_one(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_number and float(node.this) == 1.0


def _sources(select: exp.Select) -> dict[str, exp.Expr]:
    """alias -> the Table or the subquery/CTE select it names, for FROM and every JOIN."""
    out: dict[str, exp.Expr] = {}
    source = select.args.get("from") or select.args.get("from_")
    items = ([source.this] if source is not None else []) + [j.this for j in select.args.get("joins") or []]
    for item in items:
        out[item.alias_or_name.lower()] = item
    return out


def _cte(root: exp.Select, name: str) -> exp.Select | None:
    for cte in (root.args.get("with_") or root.args.get("with") or exp.With()).expressions:
        if cte.alias_or_name.lower() == name and isinstance(cte.this, exp.Select):
            return cte.this
    return None


def _mismatch(model: SemanticModel, name: str, expr: exp.Expr, select: exp.Select, root: exp.Select) -> str | None:
    metric = model.metrics[name]
    expr = _strip(expr)
    if isinstance(expr, exp.Column):  # passed through from a derived table or CTE: follow it by name
        inner = _inner_select(select, root, expr)
        if inner is None:
            return None
        for projection in inner.expressions:
            if projection.alias_or_name.lower() == expr.name.lower():
                return _mismatch(model, name, _unalias(projection), inner, root)
        return None
    if metric.type == "derived":
        return None
    if metric.type == "ratio":
        return _ratio(model, metric, expr, select)
    if not any(isinstance(expr, t) for t in (*_AGGS, exp.Filter)):
        if expr.find(*_AGGS) is None:
            return None  # a row's own value (revenue of one order), not the metric
        return f"it is computed as {expr.sql(dialect='postgres')}, not as one aggregate"
    return _simple(model, name, expr, select)


def _inner_select(select: exp.Select, root: exp.Select, column: exp.Column) -> exp.Select | None:
    sources = _sources(select)
    qualifier = column.table.lower()
    if not qualifier and len(sources) == 1:
        qualifier = next(iter(sources))
    found = sources.get(qualifier)
    if isinstance(found, exp.Subquery) and isinstance(found.this, exp.Select):
        return found.this
    if isinstance(found, exp.Table):
        return _cte(root, found.name.lower())
    return None


def _ratio(model: SemanticModel, metric: Metric, expr: exp.Expr, select: exp.Select) -> str | None:
    assert metric.numerator and metric.denominator
    if isinstance(expr, exp.Avg):
        numerator, denominator = model.metrics[metric.numerator], model.metrics[metric.denominator]
        top = model.measure(numerator.measure or "")
        bottom = model.measure(denominator.measure or "")
        if (top and bottom and top[1].agg == "sum" and bottom[1].agg == "count" and top[0] == bottom[0]
                and numerator.filter == denominator.filter):
            return _simple(model, metric.numerator, exp.Sum(this=expr.this), select)
        if (top and bottom and top[1].agg == "count" and bottom[1].agg == "count" and top[0] == bottom[0]
                and numerator.filter and not denominator.filter and _share_of_rows(expr.this, numerator.filter)):
            return _joins(model, top[0], *_base(model, top[0], select))  # avg(CASE WHEN f THEN 1 ELSE 0 END)
        return "it is an average, and the definition is not a sum over a row count with the same filter"
    if not isinstance(expr, exp.Div):
        return f"it is computed as {expr.sql(dialect='postgres')}, not as {metric.numerator} / {metric.denominator}"
    under = _strip(expr.expression)
    if isinstance(under, exp.Nullif):
        under = _strip(under.this)
    for part, node in ((metric.numerator, _strip(expr.this)), (metric.denominator, under)):
        problem = _mismatch(model, part, node, select, select)
        if problem:
            return f"its {'numerator' if part == metric.numerator else 'denominator'} ({part}): {problem}"
    return None


def _share_of_rows(node: exp.Expr, condition: str) -> bool:
    """``CASE WHEN condition THEN 1 ELSE 0 END``: averaged, the share of rows meeting the condition."""
    node = _strip(node)
    if not (isinstance(node, exp.Case) and len(node.args.get("ifs") or []) == 1):
        return False
    branch, default = node.args["ifs"][0], node.args.get("default")
    if not (_is_one(_strip(branch.args["true"])) and default is not None and _is_zero(_strip(default))):
        return False
    have = [c for c in (_normalize(n, None) for n in _conjuncts(branch.this)) if c is not None]
    want = [_atom(n) for n in _conjuncts(sqlglot.condition(condition, dialect="postgres"))]
    return len(have) == len(want) and all(any(_implies(h, w) and _implies(w.tree, _atom(h)) for h in have)
                                          for w in want)


def _base(model: SemanticModel, entity: str, select: exp.Select) -> tuple[str, exp.Select, dict[str, str]]:
    tables = {alias: node.name.lower() for alias, node in _sources(select).items() if isinstance(node, exp.Table)}
    alias = next((a for a, t in tables.items() if t == model.entities[entity].table.lower()), "")
    return alias, select, tables


def _simple(model: SemanticModel, name: str, expr: exp.Expr, select: exp.Select) -> str | None:
    metric = model.metrics[name]
    entity_name, measure = model.measure(metric.measure or "") or ("", None)
    if measure is None:
        return None
    entity = model.entities[entity_name]
    inside: list[exp.Expr] = []
    if isinstance(expr, exp.Filter):
        inside += list(_conjuncts(expr.expression.this))
        expr = expr.this
    agg = _AGGS.get(type(expr))
    if agg is None:
        return None
    argument = expr.this
    if isinstance(argument, exp.Distinct):
        agg, argument = ("count_distinct" if agg == "count" else agg), argument.expressions[0]
    if isinstance(argument, exp.Case) and len(argument.args.get("ifs") or []) == 1:
        default = argument.args.get("default")
        if default is None or isinstance(default, exp.Null) or (agg == "sum" and _is_zero(default)):
            branch = argument.args["ifs"][0]
            inside += list(_conjuncts(branch.this))
            argument = branch.args["true"]
    if agg != measure.agg:
        return f"it aggregates with {agg}, not {measure.agg}"
    sources = _sources(select)
    tables = {alias: node.name.lower() for alias, node in sources.items() if isinstance(node, exp.Table)}
    aliases = [a for a, t in tables.items() if t == entity.table.lower()]
    if not aliases:
        return f"it does not read {entity.table}"
    alias = aliases[0]
    if not _same_measure(argument, measure.expr, alias, set(tables), agg, entity.primary_key):
        return (f"it aggregates {argument.sql(dialect='postgres')}, not {measure.expr} "
                f"of {entity.table}")
    available = [c for c in (_normalize(n, alias) for n in inside + list(_outer_conjuncts(select, alias)))
                 if c is not None]
    for needed in _conjuncts(sqlglot.condition(metric.filter, dialect="postgres")) if metric.filter else ():
        atom = _atom(needed)
        if not any(_implies(c, atom) for c in available):
            return f"it misses the metric's filter {needed.sql(dialect='postgres')}"
    allowed = [_atom(n) for n in _conjuncts(sqlglot.condition(metric.filter, dialect="postgres"))] \
        if metric.filter else []
    for extra in inside:
        normal = _normalize(extra, alias)
        if normal is None or not any(_implies(a.tree, _atom(normal)) and _implies(normal, a) for a in allowed):
            return f"it adds the condition {extra.sql(dialect='postgres')} inside the aggregate"
    if agg not in _DUPLICATE_PROOF:
        return _joins(model, entity_name, alias, select, tables)
    return _joins(model, entity_name, alias, select, tables, fan_out_ok=True)


def _is_zero(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_number and float(node.this) == 0.0


def _same_measure(argument: exp.Expr, definition: str, alias: str, aliases: set[str], agg: str,
                  primary_key: str) -> bool:
    if agg == "count" and (isinstance(argument, exp.Star) or (
            isinstance(argument, exp.Column) and argument.name.lower() == primary_key.lower()
            and argument.table.lower() in {"", alias})):
        return True
    mine = argument.copy()
    for column in mine.find_all(exp.Column):
        if column.table and column.table.lower() != alias:
            return False
        column.set("table", None)
    return _canonical(mine) == _canonical(sqlglot.parse_one(definition, dialect="postgres"))


def _canonical(node: exp.Expr) -> str:
    from sqlglot.optimizer.normalize import normalize
    from sqlglot.optimizer.simplify import simplify

    try:
        return simplify(normalize(node.copy())).sql(dialect="postgres", normalize=True)
    except (SqlglotError, RecursionError):
        return node.sql(dialect="postgres", normalize=True)


def _outer_conjuncts(select: exp.Select, alias: str) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    where = select.args.get("where")
    if where is not None:
        out += list(_conjuncts(where.this))
    for join in select.args.get("joins") or ():
        on = join.args.get("on")
        if on is not None and (not join.side or join.this.alias_or_name.lower() == alias):
            out += list(_conjuncts(on))
    return out


def _joins(model: SemanticModel, entity: str, alias: str, select: exp.Select, tables: dict[str, str],
           fan_out_ok: bool = False) -> str | None:
    """Every joined table must hang off the metric's entity along declared many-to-one relationships."""
    by_table = {e.table.lower(): name for name, e in model.entities.items()}
    reached = {alias: entity}
    joins = list(select.args.get("joins") or [])
    progress = True
    while progress:
        progress = False
        for join in joins:
            target = join.this.alias_or_name.lower()
            if target in reached or target not in tables:
                continue
            pairs = _join_pairs(join, target, reached, tables)
            for other, mine, theirs in pairs:
                here, there = reached[other], by_table.get(tables[target])
                if there is None:
                    continue
                if any(r.to == there and r.foreign_key.lower() == theirs
                       and model.entities[there].primary_key.lower() == mine
                       for r in model.entities[here].relationships):
                    reached[target] = there
                    progress = True
                    break
                if fan_out_ok and any(r.to == here and r.foreign_key.lower() == mine
                                      for r in model.entities[there].relationships):
                    reached[target] = there
                    progress = True
                    break
    for join in joins:
        target = join.this.alias_or_name.lower()
        if target in tables and target not in reached:
            return (f"it joins {tables[target]} ({join.args.get('on') or 'USING'}), a path the model does not "
                    "declare or one that repeats the metric's rows (fan-out); join only along declared "
                    "relationships from " + model.entities[entity].table)
    return None


def _join_pairs(join: exp.Join, target: str, reached: dict[str, str],
                tables: dict[str, str]) -> list[tuple[str, str, str]]:
    """(reached alias, target's column, reached alias's column) for each equality linking them."""
    out: list[tuple[str, str, str]] = []
    using = join.args.get("using") or []
    for column in using:
        key = column.name.lower()
        out += [(other, key, key) for other in reached]
    on = join.args.get("on")
    for part in _conjuncts(on) if on is not None else ():
        if not isinstance(part, exp.EQ):
            continue
        left, right = part.this, part.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        for mine, theirs in ((left, right), (right, left)):
            if mine.table.lower() == target and theirs.table.lower() in reached:
                out.append((theirs.table.lower(), mine.name.lower(), theirs.name.lower()))
    return out
