"""Size analysis by allowlist: an upper bound of every value a query builds and every row count it makes.

Every allowed function and operator has a declared output-size rule (:data:`RULES`, :data:`OPERATOR_RULES`):
bounded by its inputs (``lower``: the largest; ``concat``: their sum), by a constant (``length``, ``md5``),
or by a product of its inputs (``repeat``, ``replace``, ``regexp_replace``, ``array_fill``, ``lpad``). Sizes
propagate through expressions, casts, CASE, subqueries and CTEs. A bound is a :class:`Size`::

    bytes <= const + data * V + table * T

``const`` is built from constants in the text; ``data`` counts copies of one stored value (a column), whose
size ``V`` is the policy's ``assumed_value_bytes``; ``table`` counts copies of the data of the scanned tables
(``T``: what an aggregate such as ``string_agg(name, ',')`` over table rows builds, or ``count(*)`` as a
number), which the text cannot size and is only allowed a few times over (:data:`MAX_TABLE_COPIES`). An
unknown bound is ``inf``: a count into an amplifier that is not a constant and not capped
(``repeat('x', (SELECT count(*) FROM t) * 15000)``; ``LEAST(expr, 500)`` caps it), or a product of two
table-sized values.

Counts (the second argument of ``repeat``, the length of ``lpad``, array dimensions, exponents) are bounded
by :meth:`Sizes.count`: constants, ``LEAST`` with one constant, ``GREATEST``/``CASE``/``COALESCE`` of
bounded arms, sums, products of non-negative bounds, division by a positive constant, ``count(*)`` (at most
one copy of table rows) and ``length`` of a bounded value.

Row counts: :meth:`Sizes.rows` bounds the rows a FROM produces: a set-returning function by its arguments
(``unnest``, ``string_to_table``, ``regexp_split_to_table``, ``json*_array_elements``, ``jsonb_each``,
``generate_series`` ...), a join by the product of its sides, a table by "table rows" (unknown, stored).

What this cannot bound: how many rows a table or a join of tables has (the planner's estimate and the cost
gate are the layer for that), and the true size of stored values (``V`` is an assumption). See the
"Resource bounds" section of docs/security.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gateway.safety import fold
from gateway.safety.counters import iterations
from gateway.safety.functions import SET_RETURNING
from gateway.safety.policy import Policy
from gateway.safety.tree import JSON, Tree, names, unwrap

INF = math.inf
MAX_TABLE_COPIES = 32.0  # a value may hold at most this many copies of the scanned tables' data
NUMBER = 40.0  # bytes of a number, date, timestamp, interval, boolean, uuid: any fixed-size value
ROW_OVERHEAD = 28.0  # bytes a stored row takes at least (tuple header and line pointer): rows <= T / 28


@dataclass(frozen=True, slots=True)
class Size:
    """``bytes <= const + data * V + table * T`` (see the module docstring); ``why`` explains an inf."""

    const: float = 0.0
    data: float = 0.0
    table: float = 0.0
    why: str = ""

    def bytes(self, per_value: float) -> float:
        return self.const + self.data * per_value

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.const) and math.isfinite(self.data) and math.isfinite(self.table)

    def __add__(self, other: Size) -> Size:
        return Size(self.const + other.const, self.data + other.data, self.table + other.table,
                    self.why or other.why)

    def scale(self, k: float) -> Size:
        k = max(k, 0.0)
        return Size(_mul(self.const, k), _mul(self.data, k), _mul(self.table, k), self.why)

    def plus(self, n: float) -> Size:
        return Size(self.const + n, self.data, self.table, self.why)


def _mul(a: float, b: float) -> float:
    return 0.0 if a == 0 or b == 0 else a * b


def unknown(why: str) -> Size:
    return Size(INF, 0.0, 0.0, why)


ZERO = Size()
FIXED = Size(NUMBER)


def product(a: Size, b: Size, per_value: float) -> Size:
    """A bound of ``a * b`` (a value repeated a count of times): V*V folds into V, T*T is unbounded."""
    if a.table and b.table:
        return unknown("it multiplies two values the size of table data")
    const = _mul(a.const, b.const)
    data = _mul(a.const, b.data) + _mul(a.data, b.const) + _mul(_mul(a.data, b.data), per_value)
    table = _mul(a.table, b.bytes(per_value)) + _mul(b.table, a.bytes(per_value))
    return Size(const, data, table, a.why or b.why)


def widest(sizes: list[Size]) -> Size:
    if not sizes:
        return ZERO
    return Size(max(s.const for s in sizes), max(s.data for s in sizes), max(s.table for s in sizes),
                next((s.why for s in sizes if s.why), ""))


def total(sizes: list[Size]) -> Size:
    out = ZERO
    for s in sizes:
        out = out + s
    return out


@dataclass(frozen=True, slots=True)
class Rows:
    """Rows a FROM (or a set-returning function) produces: at most ``bound``, times the rows of stored
    tables when ``table`` (unknown to the text: the cost gate's layer)."""

    bound: float = 1.0
    table: bool = False

    def __mul__(self, other: Rows) -> Rows:
        return Rows(_mul(self.bound, other.bound) if self.bound and other.bound else 0.0, self.table or other.table)


# --- declared output-size rules --------------------------------------------------------------------------
# FIXED: a fixed-size result whatever the input.  MAX: at most the largest argument (plus a number's width).
# SUM: at most the sum of the arguments.  SCALED(k): k times the sum (escaping, encodings, padding of JSON).
# The amplifiers (repeat, lpad, replace ...) have their own code in Sizes._call.

_FIXED = """
    length char_length character_length octet_length bit_length position strpos ascii md5 sha224 sha256 sha384
    sha512 crc32 crc32c array_length cardinality regexp_count regexp_instr regexp_like starts_with num_nulls
    num_nonnulls json_array_length jsonb_array_length json_typeof jsonb_typeof array_ndims array_lower
    array_upper array_dims array_position age clock_timestamp date_add date_bin date_part date_subtract
    date_trunc extract isfinite justify_days justify_hours justify_interval make_date make_interval make_time
    make_timestamp make_timestamptz now statement_timestamp timeofday transaction_timestamp to_date
    to_timestamp timezone overlaps random random_normal pi sign scale min_scale width_bucket cos cosd cot cotd
    sin sind tan tand sinh cosh tanh asinh acosh atanh acos acosd asin asind atan atand atan2 atan2d degrees
    radians cbrt erf erfc get_byte get_bit bit_count is_normalized jsonb_path_exists jsonb_path_match
    jsonb_path_exists_tz jsonb_path_match_tz isempty lower_inc upper_inc lower_inf upper_inf current_database
    current_schema pg_typeof pg_size_pretty pg_size_bytes gen_random_uuid uuidv4 uuidv7 uuid_extract_timestamp
    uuid_extract_version pg_collation_for host hostmask masklen netmask network family abbrev broadcast
    inet_merge inet_same_family date time timestamp timestamptz interval bool int int2 int4 int8 smallint
    bigint integer real float4 float8 to_hex to_bin to_oct ts_rank ts_rank_cd numnode count avg bit_and
    bit_or bit_xor bool_and bool_or every corr covar_pop covar_samp regr_avgx regr_avgy regr_count
    regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy stddev stddev_pop stddev_samp variance
    var_pop var_samp percentile_cont row_number rank dense_rank percent_rank cume_dist ntile numeric_inc
    generate_series generate_subscripts
"""
_MAX = """
    lower upper initcap casefold btrim ltrim rtrim trim substr substring left right split_part reverse abs
    ceil ceiling floor round trunc mod div gcd lcm sqrt ln log log10 trim_scale greatest least min max
    any_value mode percentile_disc first_value last_value nth_value lag lead regexp_substr json_extract_path
    json_extract_path_text jsonb_extract_path jsonb_extract_path_text jsonb_path_query_first
    jsonb_path_query_first_tz jsonb_path_query jsonb_path_query_tz decode unnest string_to_table
    regexp_split_to_table json_array_elements jsonb_array_elements json_array_elements_text
    jsonb_array_elements_text json_each jsonb_each json_each_text jsonb_each_text json_object_keys
    jsonb_object_keys json_strip_nulls jsonb_strip_nulls array_remove array_reverse array_sample array_shuffle
    array_sort trim_array unistr setweight strip ts_delete ts_filter querytree to_number numeric text varchar
    bpchar similar_to_escape like_escape current_schemas
"""
_SUM = """
    concat overlay array_append array_prepend array_cat jsonb_set jsonb_set_lax jsonb_insert range_merge
    int4range int8range numrange tsrange tstzrange daterange int4multirange int8multirange nummultirange
    tsmultirange tstzmultirange datemultirange multirange json_populate_record jsonb_populate_record
    json_populate_recordset jsonb_populate_recordset json_to_record jsonb_to_record json_to_recordset
    jsonb_to_recordset jsonb_populate_record_valid jsonb_path_query_array jsonb_path_query_array_tz
    regexp_match regexp_matches tsvector_to_array array_positions
"""
_SCALED: dict[str, float] = {
    **dict.fromkeys(("quote_ident", "quote_literal", "quote_nullable"), 2.0),
    **dict.fromkeys(("encode", "convert_from", "convert_to", "translate", "phraseto_tsquery", "to_tsquery",
                     "plainto_tsquery", "websearch_to_tsquery", "to_tsvector", "array_to_tsvector",
                     "string_to_array", "regexp_split_to_array", "ts_headline"), 4.0),
    **dict.fromkeys(("to_json", "to_jsonb", "row_to_json", "array_to_json", "json_build_array",
                     "jsonb_build_array", "json_build_object", "jsonb_build_object", "json_object",
                     "jsonb_object"), 2.0),  # quotes, keys and separators (a control character escapes to six)
    "normalize": 18.0,  # NFKD/NFKC: one code point decomposes into up to 18
}
# Aggregates that build one value out of every row they read.
BUILDING_AGGREGATES = frozenset("""
    array_agg string_agg json_agg jsonb_agg json_agg_strict jsonb_agg_strict json_object_agg jsonb_object_agg
    json_object_agg_strict jsonb_object_agg_strict json_object_agg_unique jsonb_object_agg_unique
    json_object_agg_unique_strict jsonb_object_agg_unique_strict range_agg range_intersect_agg xmlagg
""".split())
# Amplifiers: their size depends on a count, handled one by one below.
AMPLIFIERS = frozenset("""
    repeat lpad rpad array_fill format replace regexp_replace array_replace array_to_string to_char
    factorial power pow exp jsonb_pretty concat_ws
""".split())

RULES: dict[str, str | float] = {
    **dict.fromkeys(_FIXED.split(), "fixed"),
    **dict.fromkeys(_MAX.split(), "max"),
    **dict.fromkeys(_SUM.split(), "sum"),
    **_SCALED,
    **dict.fromkeys(BUILDING_AGGREGATES, "aggregate"),
    **dict.fromkeys(AMPLIFIERS, "amplifier"),
}

# Operators: the size of what they return. Comparisons and tests return a boolean.
OPERATOR_RULES: dict[str, str] = {
    **dict.fromkeys(("=", "<>", "!=", "<", ">", "<=", ">=", "~", "~*", "!~", "!~*", "~~", "~~*", "!~~", "!~~*",
                     "@>", "<@", "&&", "?", "?|", "?&", "@?", "@@", "@@@", "<<", ">>", "&<", "&>", "-|-",
                     "^@", "<<=", ">>="), "fixed"),
    **dict.fromkeys(("+", "-", "/", "%", "&", "|", "#", "|/", "||/", "@", "!!"), "max"),
    **dict.fromkeys(("->", "->>", "#>", "#>>", "#-"), "max"),
    "||": "sum",
    "*": "sum",  # numeric digits add up; a range intersection is smaller than either side
    "^": "power",
}


class Sizes:
    """Upper bounds of the values and row counts of one statement, memoised per node."""

    def __init__(self, tree: Tree, policy: Policy, overrides: dict[tuple[str, str], Size] | None = None) -> None:
        self.tree = tree
        self.overrides = overrides or {}  # columns of a recursive CTE, fixed while its next step is measured
        self._resolving: set[tuple[str, str]] = set()
        self.policy = policy
        self.per_value = float(policy.assumed_value_bytes)
        self._seen: dict[int, Size] = {}
        self._scope = {id(call): scope for call, scope in tree.funcs}
        self._col_scope = {id(ref): scope for ref, scope in tree.columns}
        self._selects = tree.selects
        self._select_index = {id(s.body): i for i, s in enumerate(tree.selects)}
        self._ctes = {c.get("ctename"): c for c, _ in tree.ctes if c.get("ctename")}
        self._rows_seen: dict[int, Rows | None] = {}
        self._series_columns = self._number_columns()

    # -- values ----------------------------------------------------------------------------------------
    def of(self, node: Any, depth: int = 0) -> Size:
        key = id(unwrap(node)[1]) if unwrap(node)[0] else id(node)
        found = self._seen.get(key)
        if found is None:
            self._seen[key] = Size(data=1.0)  # a reference back to itself (a column of its own subquery)
            found = self._measure(node, depth) if depth < 200 else unknown("it is nested too deeply")
            self._seen[key] = found
        return found

    def _measure(self, node: Any, depth: int) -> Size:
        kind, body = unwrap(node)
        d = depth + 1
        if kind == "A_Const":
            if "ival" in body or "fval" in body or "boolval" in body:
                return FIXED
            value = fold.text(node)
            return Size(float(len(value.encode())) if value is not None else 0.0)
        if kind == "ColumnRef":
            return self._column(body)
        if kind == "ParamRef":
            return Size(data=1.0)
        if kind == "TypeCast":
            return self._cast(body, d)
        if kind == "A_Expr":
            return self._operator(body, d)
        if kind == "FuncCall":
            return self._call(body, d)
        if kind == "SubLink":
            return self._sublink(body, d)
        if kind in ("CaseExpr",):
            arms = [unwrap(w)[1].get("result") for w in body.get("args", ())] + [body.get("defresult")]
            return widest([self.of(a, d) for a in arms if a is not None])
        if kind in ("CoalesceExpr", "MinMaxExpr"):
            return widest([self.of(a, d) for a in body.get("args", ())])
        if kind in ("BoolExpr", "NullTest", "BooleanTest", "SQLValueFunction", "GroupingFunc", "SetToDefault"):
            return FIXED
        if kind in ("A_ArrayExpr", "RowExpr"):
            items = body.get("elements" if kind == "A_ArrayExpr" else "args", ())
            return total([self.of(e, d).plus(1.0) for e in items])
        if kind in ("A_Indirection", "CollateClause", "NamedArgExpr"):
            return self.of(body.get("arg"), d)
        if kind == "A_Star":
            return Size(data=1.0)
        # Anything else (JSON constructors, XML ...): not an amplifier, at most the sum of what it holds.
        return total([self.of(v, d) for v in _children(body)]).plus(NUMBER)

    def _column(self, ref: JSON) -> Size:
        parts = names(ref.get("fields"))
        scope = self._col_scope.get(id(ref))
        if parts and scope is not None:
            qualifier = parts[-2] if len(parts) > 1 else parts[-1]
            for s in self._enclosing(scope):
                if qualifier in self._series_columns.get(s, ()):
                    return FIXED  # a column of generate_series: a number or a timestamp
                found = self._derived_column(s, parts)
                if found is not None:
                    return found
                if len(parts) == 1 and self._selects[s].body.get("fromClause"):
                    break  # an unqualified column belongs to the innermost FROM
        return Size(data=1.0)

    def _derived_column(self, scope: int, parts: list[str]) -> Size | None:
        """A column of a subquery or CTE in this SELECT's FROM: the size of what it selects."""
        column = parts[-1]
        qualifier = parts[-2] if len(parts) > 1 else None
        for item in self._selects[scope].body.get("fromClause", ()):
            for kind, body in _from_items(item):
                alias = body.get("alias", {}).get("aliasname")
                if kind == "RangeSubselect":
                    _, query = unwrap(body.get("subquery"))
                    cte_name = None
                elif kind == "RangeVar" and not body.get("schemaname") and body.get("relname") in self._ctes:
                    cte = self._ctes[body["relname"]]
                    _, query = unwrap(cte.get("ctequery"))
                    cte_name, alias = body["relname"], alias or body["relname"]
                else:
                    continue
                if qualifier is not None and qualifier != alias:
                    continue
                columns = names(body.get("alias", {}).get("colnames")) or (
                    names(self._ctes[cte_name].get("aliascolnames")) if cte_name else []) or _target_names(query)
                if column not in columns:
                    continue
                index = columns.index(column)
                if cte_name is not None:
                    return self._cte_column(cte_name, columns, index)
                return self._arm_column(query, index)
        return None

    def _arm_column(self, query: JSON, index: int) -> Size:
        if query.get("op", "SETOP_NONE") != "SETOP_NONE":
            return widest([self._arm_column(query.get("larg") or {}, index),
                           self._arm_column(query.get("rarg") or {}, index)])
        targets = query.get("targetList", ())
        if index >= len(targets):
            return Size(data=1.0)
        return self.of(unwrap(targets[index])[1].get("val"))

    def _cte_column(self, name: str, columns: list[str], index: int) -> Size:
        key = (name, columns[index])
        if key in self.overrides:
            return self.overrides[key]
        if key in self._resolving:
            return unknown("it is defined through itself")
        self._resolving.add(key)
        try:
            cte = self._ctes[name]
            _, query = unwrap(cte.get("ctequery"))
            term = query.get("rarg") if query.get("op") == "SETOP_UNION" else None
            if term is None or not any(k == "RangeVar" and b.get("relname") == name for k, b in _walk(term)):
                return self._arm_column(query, index)
            first = query.get("larg") or {}
            start = {(name, c): self._arm_column(first, i) for i, c in enumerate(columns)}
            step1 = Sizes(self.tree, self.policy, {**self.overrides, **start})._arm_column(term, index)
            s0 = start[key]
            if _le(step1, s0, self.per_value):
                return s0
            after = {(name, c): Sizes(self.tree, self.policy, {**self.overrides, **start})._arm_column(term, i)
                     for i, c in enumerate(columns)}
            step2 = Sizes(self.tree, self.policy, {**self.overrides, **after})._arm_column(term, index)
            grow = _diff(step1, s0)
            if grow is None or _diff(step2, step1) != grow:
                return unknown(f"column {columns[index]} of {name} grows faster than by a constant each step")
            steps = iterations(cte)
            if steps is None:
                return unknown(f"column {columns[index]} of {name} grows with every step of a recursion "
                               "whose number of steps is not counted")
            return s0 + grow.scale(steps)
        finally:
            self._resolving.discard(key)

    def _cast(self, body: JSON, d: int) -> Size:
        inner = self.of(body.get("arg"), d)
        type_name = body.get("typeName", {})
        base = (names(type_name.get("names")) or [""])[-1].lower()
        mods = [fold.number(m) for m in type_name.get("typmods", ())]
        width = mods[0] if mods and mods[0] is not None else None
        if base in ("bpchar", "char", "character") and width is not None:
            return widest([inner, Size(4.0 * width)])  # char(n) pads to n characters
        if base in ("bit", "varbit") and width is not None:
            return widest([inner, Size(width / 8)])
        if base in _FIXED_TYPES and not type_name.get("arrayBounds"):
            return FIXED
        return inner

    def _operator(self, body: JSON, d: int) -> Size:
        op = (names(body.get("name")) or [""])[-1]
        left = self.of(body["lexpr"], d) if body.get("lexpr") is not None else ZERO
        right = self.of(body["rexpr"], d) if body.get("rexpr") is not None else ZERO
        if body.get("kind") == "AEXPR_NULLIF":
            return left
        if body.get("kind") not in ("AEXPR_OP",):
            return FIXED  # IN, BETWEEN, LIKE, DISTINCT, ANY/ALL: a boolean
        rule = OPERATOR_RULES.get(op, "sum")
        if rule == "fixed":
            return FIXED
        if rule == "max":
            return widest([left, right, FIXED])  # a carry digit fits in a number's width
        if rule == "power":
            return self._power(left, body.get("rexpr"))
        return left + right

    def _power(self, base: Size, exponent: Any) -> Size:
        """numeric ^ e has about digits(base) * e digits; a float result is smaller."""
        bound = self.count(exponent)
        if bound is None:
            return unknown("its exponent is not a constant; cap it with LEAST(expr, N)")
        return product(widest([base, Size(1.0)]), widest([bound, Size(1.0)]), self.per_value).plus(NUMBER)

    def _sublink(self, body: JSON, d: int) -> Size:
        kind = body.get("subLinkType")
        _, select = unwrap(body.get("subselect"))
        targets = select.get("targetList", ())
        value = total([self.of(unwrap(t)[1].get("val"), d) for t in targets])
        if kind == "EXPR_SUBLINK":
            return value
        if kind == "ARRAY_SUBLINK":
            return self._gathered(value, self.rows_of_select(select))
        return FIXED

    def _call(self, call: JSON, d: int) -> Size:
        name = (names(call.get("funcname")) or [""])[-1].lower()
        args = list(call.get("args", ()))
        sizes = [self.of(a, d) for a in args]
        for extra in ("agg_order", "agg_filter"):
            for node in call.get(extra) or ():
                self.of(node, d)  # judged too (their own findings), not part of the result
        rule = RULES.get(name)
        if rule == "fixed":
            return FIXED
        if rule == "max":
            return widest([*sizes, FIXED])
        if rule == "sum":
            return total(sizes).plus(NUMBER)
        if isinstance(rule, float):
            return total(sizes).scale(rule).plus(NUMBER)
        if rule == "aggregate":
            per_row = total(sizes).plus(4.0)  # the value and its separator or array header
            scope = self._scope.get(id(call))
            rows = self.rows_of_from(self._selects[scope].body) if scope is not None else None
            return self._gathered(per_row, rows)
        if rule == "amplifier":
            return self._amplifier(name, args, sizes)
        # No declared rule (a DBA's extra function): not assumed to amplify, bounded by its inputs.
        return total(sizes).plus(NUMBER)

    def _gathered(self, per_row: Size, rows: Rows | None) -> Size:
        """One value built from every row: rows * per-row size, or one copy of table data per row."""
        if rows is None or not math.isfinite(rows.bound):
            return unknown("it gathers a number of rows the text does not bound")
        if not rows.table:
            return per_row.scale(rows.bound)
        if per_row.table:
            return unknown("it gathers a value the size of table data once per table row")
        # Over table rows: each row's own data is part of T; the constant bytes count per stored row.
        copies = rows.bound * (per_row.data + per_row.const / ROW_OVERHEAD)
        return Size(table=copies, why=per_row.why)

    def _amplifier(self, name: str, args: list[Any], sizes: list[Size]) -> Size:
        pv = self.per_value
        first = sizes[0] if sizes else ZERO
        need = _COUNT_ARGUMENT.get(name)
        if need is not None and len(args) > need:
            count = self.count(args[need])
            if count is None:
                return unknown(f"the count given to {name}() is not a constant; cap it with LEAST(expr, N)")
        if name == "repeat" and len(args) == 2:
            return product(first, self.count(args[1]) or ZERO, pv)
        if name in ("lpad", "rpad") and len(args) >= 2:
            fill = args[2] if len(args) > 2 else None
            text = fold.text(fill) if fill is not None else " "
            per_char = 1.0 if text is not None and text.isascii() else 4.0
            return first + (self.count(args[1]) or ZERO).scale(per_char)
        if name == "array_fill" and len(args) >= 2:
            elements = self._elements(args[1])
            if elements is None:
                return unknown("the dimensions given to array_fill() are not constants; cap them with LEAST")
            return product(widest([first, Size(1.0)]), elements, pv)
        if name == "format" and args:
            return self._format(args, sizes)
        if name == "replace" and len(args) == 3:
            pattern = fold.text(args[1])
            step = float(len(pattern.encode())) if pattern else 1.0
            return first + product(first.scale(1 / step), sizes[2], pv)
        if name == "regexp_replace" and len(args) >= 3:
            # Every position may match (an empty match), and \\& puts the match back: (n + 1) * replacement
            # plus the matched text once per backreference.
            return first + product(first.plus(1.0).scale(2.0), sizes[2], pv)
        if name == "array_replace" and len(args) == 3:
            return first + product(first, sizes[2], pv)
        if name == "array_to_string" and len(args) >= 2:
            return first + product(first, total(sizes[1:]), pv)
        if name == "concat_ws" and args:
            return total(sizes[1:]) + product(first, Size(float(len(args))), pv)
        if name == "to_char" and len(args) == 2:
            return first + sizes[1].scale(4.0).plus(NUMBER)  # 'TMMonth' and alike: a few bytes per letter
        if name == "jsonb_pretty" and args:
            # Indentation grows with depth: quadratic in a constant-built document; stored documents are
            # taken as nested a few levels deep.
            return Size(_mul(first.const, first.const), first.data * 8, first.table * 8, first.why).plus(NUMBER)
        if name in ("power", "pow") and len(args) == 2:
            return self._power(first, args[1])
        if name == "factorial" and args:
            n = self.count(args[0])
            if n is None or n.data or n.table:
                return unknown("its argument is not a constant; cap it with LEAST(expr, N)")
            digits = math.lgamma(n.const + 1) / math.log(10) if n.const > 1 else 1.0
            return Size(digits / 2 + NUMBER)
        if name == "exp" and args:
            n = self.count(args[0])
            digits = (n.const / math.log(10)) if n is not None and not (n.data or n.table) else 0.0
            return first.plus(digits / 2 + NUMBER)
        return total(sizes).plus(NUMBER)

    def _format(self, args: list[Any], sizes: list[Size]) -> Size:
        pattern = fold.text(args[0])
        if pattern is None:
            width = sizes[0]  # a pattern from data: its widths are unknown
            if not sizes[0].bounded or sizes[0].data or sizes[0].table:
                return unknown("the pattern of format() is not a constant")
            return width + total(sizes[1:])
        out = Size(_format_width(pattern)) + total(sizes[1:])
        if "*" in pattern:  # '%*s': the width is an argument
            for a in args[1:]:
                bound = self.count(a)
                if bound is None:
                    return unknown("a width given to format() is not a constant; cap it with LEAST(expr, N)")
                out = out + bound
        return out

    def _elements(self, dims: Any) -> Size | None:
        kind, body = unwrap(dims)
        while kind == "TypeCast":
            dims = body.get("arg")
            kind, body = unwrap(dims)
        if kind == "A_ArrayExpr":
            out = Size(1.0)
            for e in body.get("elements", ()):
                bound = self.count(e)
                if bound is None:
                    return None
                out = product(out, bound, self.per_value)
            return out
        literal = fold.text(dims)
        if literal is None or not literal.strip().startswith("{"):
            return None
        out_n = 1.0
        for part in literal.strip().strip("{}").split(","):
            try:
                out_n *= max(float(part), 0.0)
            except ValueError:
                return None
        return Size(out_n)

    # -- counts --------------------------------------------------------------------------------------------
    def count(self, node: Any, depth: int = 0) -> Size | None:
        """An upper bound of a number (a count, a length, an exponent), or None when the text does not bound it.

        The bound is in the units of :class:`Size`: ``count(*)`` is at most one copy of table rows,
        ``length(name)`` at most one stored value.
        """
        low, high = self._range(node, depth)
        return high

    def _range(self, node: Any, depth: int) -> tuple[float | None, Size | None]:
        """(lower bound as a constant or None, upper bound or None)."""
        if depth > 50:
            return None, None
        value = fold.number(node)
        if value is not None and not math.isnan(value):
            return value, Size(max(value, 0.0)) if value < INF else None
        kind, body = unwrap(node)
        d = depth + 1
        if kind in ("TypeCast", "CollateClause"):
            return self._range(body.get("arg"), d)
        if kind == "SubLink" and body.get("subLinkType") == "EXPR_SUBLINK":
            _, select = unwrap(body.get("subselect"))
            targets = select.get("targetList", ())
            if len(targets) == 1:
                return self._range(unwrap(targets[0])[1].get("val"), d)
            return None, None
        if kind == "MinMaxExpr" or (kind == "FuncCall" and _fname(body) in ("least", "greatest")):
            least = body.get("op") == "IS_LEAST" if kind == "MinMaxExpr" else _fname(body) == "least"
            ranges = [self._range(a, d) for a in body.get("args", ())]
            lows = [lo for lo, _ in ranges]
            highs = [hi for _, hi in ranges]
            if least:
                known = [h for h in highs if h is not None]
                low = min(lows) if all(lo is not None for lo in lows) else None  # type: ignore[type-var]
                # Any one bound is a bound of LEAST: a constant one is preferred (it caps table counts too).
                return low, min(known, key=lambda s: (bool(s.data or s.table), s.bytes(self.per_value))) \
                    if known else None
            low = max((lo for lo in lows if lo is not None), default=None)
            return low, widest(highs) if all(h is not None for h in highs) else None  # type: ignore[arg-type]
        if kind in ("CoalesceExpr", "CaseExpr"):
            arms = body.get("args", ()) if kind == "CoalesceExpr" else \
                [unwrap(w)[1].get("result") for w in body.get("args", ())] + [body.get("defresult")]
            ranges = [self._range(a, d) for a in arms if a is not None]
            if kind == "CaseExpr" and body.get("defresult") is None:
                ranges.append((0.0, ZERO))  # no ELSE: NULL
            if not ranges or any(hi is None or lo is None for lo, hi in ranges):
                return None, None
            return min(lo for lo, _ in ranges if lo is not None), widest([hi for _, hi in ranges if hi])
        if kind == "A_Expr" and body.get("kind") == "AEXPR_OP" and body.get("lexpr") is not None:
            op = (names(body.get("name")) or [""])[-1]
            (llo, lhi), (rlo, rhi) = self._range(body["lexpr"], d), self._range(body.get("rexpr"), d)
            rconst = fold.number(body.get("rexpr"))
            if op == "+" and lhi is not None and rhi is not None:
                return (llo + rlo if llo is not None and rlo is not None else None), lhi + rhi
            if op == "-" and lhi is not None and rconst is not None:
                return (llo - rconst if llo is not None else None), lhi.plus(-rconst) if rconst <= 0 else lhi
            if op == "*" and lhi is not None and rhi is not None and llo is not None and rlo is not None \
                    and llo >= 0 and rlo >= 0:
                return llo * rlo, product(lhi, rhi, self.per_value)
            if op == "/" and lhi is not None and rconst is not None and rconst >= 1:
                return (llo / rconst if llo is not None and llo >= 0 else None), lhi.scale(1 / rconst)
            return None, None
        if kind == "FuncCall":
            name = _fname(body)
            args = body.get("args", ())
            if name == "count" and "over" not in body:
                scope = self._scope.get(id(body))
                rows = self.rows_of_from(self._selects[scope].body) if scope is not None else None
                if rows is None or not math.isfinite(rows.bound):
                    return 0.0, None
                return 0.0, Size(table=rows.bound) if rows.table else Size(rows.bound)
            if name in _LENGTHS and args:
                return 0.0, self.of(args[0], d)
            if name in ("round", "ceil", "ceiling", "floor", "trunc") and args:
                lo, hi = self._range(args[0], d)
                return (lo - 1 if lo is not None else None), hi.plus(1.0) if hi is not None else None
        return None, None

    # -- rows ----------------------------------------------------------------------------------------------
    def rows_of_from(self, select: JSON) -> Rows | None:
        """Rows the FROM (and set-returning functions in the target list) of one SELECT produce, or None."""
        key = id(select)
        if key in self._rows_seen:
            return self._rows_seen[key]
        self._rows_seen[key] = None  # a cycle (a CTE read inside itself) is unknown
        out: Rows | None = Rows()
        for item in select.get("fromClause", ()):
            rows = self._item_rows(item)
            out = None if out is None or rows is None else out * rows
        for target in select.get("targetList", ()):
            kind, call = unwrap(unwrap(target)[1].get("val"))
            if kind == "FuncCall" and _fname(call) in SET_RETURNING:
                rows = self.function_rows(call)
                out = None if out is None or rows is None else out * rows
        if select.get("valuesLists"):
            out = Rows(float(len(select["valuesLists"])))
        self._rows_seen[key] = out
        return out

    def rows_of_select(self, select: JSON) -> Rows | None:
        """Rows one SELECT (or set operation) returns."""
        op = select.get("op", "SETOP_NONE")
        if op != "SETOP_NONE":
            left, right = self.rows_of_select(select.get("larg") or {}), self.rows_of_select(select.get("rarg") or {})
            if left is None or right is None:
                return None
            return Rows(left.bound + right.bound, left.table or right.table)
        limit = fold.number(select.get("limitCount"))
        if limit is not None and limit >= 0:
            return Rows(limit)
        targets = [unwrap(unwrap(t)[1].get("val")) for t in select.get("targetList", ())]
        aggregate_only = targets and not select.get("groupClause") and all(
            k == "FuncCall" and "over" not in c and _fname(c) in _AGGREGATES for k, c in targets)
        if aggregate_only:
            return Rows(1.0)
        return self.rows_of_from(select)

    def _item_rows(self, item: Any) -> Rows | None:
        kind, body = unwrap(item)
        if kind == "RangeVar":
            cte = self._ctes.get(body.get("relname")) if not body.get("schemaname") else None
            if cte is not None:
                _, query = unwrap(cte.get("ctequery"))
                return self.rows_of_select(query) if query else Rows(table=True)
            return Rows(table=True)
        if kind == "RangeSubselect":
            _, query = unwrap(body.get("subquery"))
            return self.rows_of_select(query)
        if kind == "RangeFunction":
            out: Rows | None = Rows(0.0)
            for entry in body.get("functions", ()):
                parts = entry.get("List", {}).get("items", ()) if isinstance(entry, dict) else entry
                for part in parts or ():
                    k, call = unwrap(part)
                    if k != "FuncCall":
                        continue
                    rows = self.function_rows(call)
                    if rows is None or out is None:
                        out = None
                    else:  # ROWS FROM (a(), b()): as many rows as the longest
                        out = Rows(max(out.bound, rows.bound), out.table or rows.table)
            return out
        if kind == "JoinExpr":
            left, right = self._item_rows(body.get("larg")), self._item_rows(body.get("rarg"))
            return None if left is None or right is None else left * right
        return Rows(table=True)  # XMLTABLE, JSON_TABLE: rows of stored documents

    def function_rows(self, call: JSON) -> Rows | None:
        """Rows one set-returning function produces, from its arguments' bounds; None when unknown."""
        name = _fname(call)
        args = call.get("args", ())
        if name == "generate_series":
            from gateway.safety.rules.generate_series import series_rows

            rows = series_rows(call)
            if rows is not None:
                return Rows(rows)
            bounds = [self._range(a, 0) for a in args[:2]]
            (lo, _), (_, hi) = bounds if len(bounds) == 2 else ((None, None), (None, None))
            step = fold.number(args[2]) if len(args) > 2 else 1.0
            if lo is not None and hi is not None and step and step > 0:
                return _as_rows(hi.plus(-lo).scale(1 / step).plus(1.0))
            return None
        if name not in SET_RETURNING:
            return Rows() if name in RULES else None
        if not args:
            return None
        if name == "unnest":  # unnest(a, b): as many rows as the longest array
            return _as_rows(widest([self.of(a) for a in args]))
        return _as_rows(self.of(args[0]).plus(1.0))

    # -- helpers -------------------------------------------------------------------------------------------
    def _enclosing(self, scope: int) -> list[int]:
        out: list[int] = []
        current: int | None = scope
        while current is not None and len(out) < 100:
            out.append(current)
            current = self._selects[current].parent
        return out

    def _number_columns(self) -> dict[int, set[str]]:
        """Per SELECT, the names by which columns of generate_series/generate_subscripts in its FROM are read."""
        out: dict[int, set[str]] = {}
        for index, select in enumerate(self._selects):
            for item in select.body.get("fromClause", ()):
                for kind, body in _from_items(item):
                    if kind != "RangeFunction" or len(body.get("functions", ())) != 1:
                        continue
                    calls = [unwrap(p) for p in _function_parts(body)]
                    if len(calls) != 1 or calls[0][0] != "FuncCall":
                        continue
                    fname = _fname(calls[0][1])
                    if fname not in ("generate_series", "generate_subscripts"):
                        continue
                    alias = body.get("alias", {})
                    found = out.setdefault(index, set())
                    found.add(alias.get("aliasname") or fname)
                    found.update(names(alias.get("colnames")))
        return out


def _le(a: Size, b: Size, per_value: float) -> bool:
    return a.bounded and a.bytes(per_value) <= b.bytes(per_value) and a.table <= b.table


def _diff(a: Size, b: Size) -> Size | None:
    if not (a.bounded and b.bounded):
        return None
    return Size(max(a.const - b.const, 0.0), max(a.data - b.data, 0.0), max(a.table - b.table, 0.0))


def _walk(node: Any) -> list[tuple[str, JSON]]:
    from gateway.safety.tree import descend

    return descend(node)


def _target_names(query: JSON) -> list[str]:
    while query.get("op", "SETOP_NONE") != "SETOP_NONE":
        query = query.get("larg") or {}
    out: list[str] = []
    for target in query.get("targetList", ()):
        _, res = unwrap(target)
        kind, val = unwrap(res.get("val"))
        if res.get("name"):
            out.append(res["name"])
        elif kind == "ColumnRef":
            out.append((names(val.get("fields")) or [""])[-1])
        elif kind == "FuncCall":
            out.append(_fname(val))
        else:
            out.append("?column?")
    return out


def _as_rows(size: Size) -> Rows:
    if not size.bounded:
        return Rows(INF)
    table = bool(size.data or size.table)
    return Rows(max(size.const + size.data + size.table * ROW_OVERHEAD, 1.0), table)


def _from_items(node: Any) -> list[tuple[str, JSON]]:
    kind, body = unwrap(node)
    if kind == "JoinExpr":
        return _from_items(body.get("larg")) + _from_items(body.get("rarg"))
    return [(kind, body)]


def _function_parts(body: JSON) -> list[Any]:
    out: list[Any] = []
    for entry in body.get("functions", ()):
        items = entry.get("List", {}).get("items", ()) if isinstance(entry, dict) else entry
        out.extend(i for i in items or () if unwrap(i)[0])
    return out


def _children(body: JSON) -> list[Any]:
    out: list[Any] = []
    for value in body.values():
        if isinstance(value, dict) and unwrap(value)[0]:
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, dict) and unwrap(v)[0])
    return out


def _fname(call: JSON) -> str:
    return (names(call.get("funcname")) or [""])[-1].lower()


def _format_width(pattern: str) -> float:
    """Length of a format() pattern plus its literal widths: '%1000000000s' pads to a billion characters."""
    total_width, i = float(len(pattern)), 0
    while i < len(pattern):
        if pattern[i] != "%":
            i += 1
            continue
        i += 1
        start = i
        while i < len(pattern) and (pattern[i].isdigit() or pattern[i] in "$-*"):
            i += 1
        width = pattern[start:i].rsplit("$", 1)[-1].lstrip("-")
        if width.isdigit():
            total_width += 4.0 * float(width)
        i += 1
    return total_width


_COUNT_ARGUMENT = {"repeat": 1, "lpad": 1, "rpad": 1}
_LENGTHS = frozenset({"length", "char_length", "character_length", "octet_length", "cardinality",
                      "array_length", "bit_length"})
_FIXED_TYPES = frozenset({
    "int2", "int4", "int8", "smallint", "integer", "bigint", "int", "float4", "float8", "real", "double",
    "bool", "boolean", "date", "time", "timetz", "timestamp", "timestamptz", "interval", "uuid", "money",
    "oid", "regclass", "regtype",
})
_AGGREGATES = frozenset(name for name, rule in RULES.items() if rule == "aggregate") | frozenset(
    "count sum avg min max bool_and bool_or every stddev variance mode percentile_cont percentile_disc".split())
