"""Functions: refused with a reason when known dangerous, otherwise allowed only from the allowlist."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gateway.safety.context import Context
from gateway.safety.functions import ALLOWED, NUMERIC_ONLY_OPERATORS, OPERATORS, WHOLE_ROW_FUNCTIONS, blocked_reason
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import JSON, descend, names, unwrap


def judge(parts: Sequence[str], policy: Policy, position: int | None = None) -> Finding | None:
    """The finding for calling the function named ``parts`` (schema parts then name), or None.

    Dangerous names are matched case-insensitively and in any schema (``"PG_SLEEP"`` or
    ``myschema.pg_sleep`` are refused too: erring on the safe side costs nothing). The allowlist matches
    Postgres's exact (folded) name, unqualified or in ``pg_catalog``, since a function in another schema
    may be anything.
    """
    name = parts[-1] if parts else ""
    full = ".".join(parts)
    shown = f"{full}()"
    reason = blocked_reason(name.lower())
    if reason is not None:
        return Finding("function_blocked", f"{shown} is blocked ({reason}).", full, position)
    extra = policy.extra_functions
    if full.lower() in extra or (len(parts) == 1 and name.lower() in extra):
        return None
    if name in ALLOWED and (len(parts) == 1 or list(parts[:-1]) == ["pg_catalog"]):
        return None
    return Finding("function_not_allowed", f"{shown} is not on the allowlist of side-effect-free functions "
                   "(a DBA can add it to the database's extra_functions).", full, position)


_SAMPLE_METHODS = frozenset({"system", "bernoulli", "system_rows", "system_time"})


def functions(ctx: Context, policy: Policy) -> Iterator[Finding]:
    for call, _ in ctx.tree.funcs:
        finding = judge(names(call.get("funcname")), policy, ctx.position(call.get("location")))
        if finding is not None:
            yield finding
    for ref, _ in ctx.tree.columns:
        # 'o.hash_record' is hash_record(o) when o has no such column: a call the loop above never sees.
        parts = names(ref.get("fields"))
        if len(parts) >= 2 and parts[-1] in WHOLE_ROW_FUNCTIONS:
            finding = judge(parts[-1:], policy, ctx.position(ref.get("location")))
            if finding is not None:
                yield finding
    for sample in ctx.tree.samples:
        # A TABLESAMPLE method is a handler function too; only the built-in and contrib ones are known.
        method = ".".join(names(sample.get("method")))
        if method not in _SAMPLE_METHODS:
            yield Finding("function_not_allowed", f"TABLESAMPLE {method} is not a known sampling method.",
                          f"TABLESAMPLE {method}", ctx.position(sample.get("location")))
    for kind, op in descend(ctx.statement.query):
        if kind == "A_Expr" and op.get("kind") in _OPERATOR_KINDS:
            finding = judge_operator(op, policy, ctx.position(op.get("location")))
            if finding is not None:
                yield finding


_OPERATOR_KINDS = frozenset({"AEXPR_OP", "AEXPR_OP_ANY", "AEXPR_OP_ALL", "AEXPR_DISTINCT", "AEXPR_NOT_DISTINCT",
                             "AEXPR_NULLIF", "AEXPR_IN", "AEXPR_LIKE", "AEXPR_ILIKE", "AEXPR_SIMILAR"})


def judge_operator(op: JSON, policy: Policy, position: int | None = None) -> Finding | None:
    """The finding for an operator expression, or None: it resolves to what it runs, like a function.

    ``OPERATOR(pg_catalog.+)`` is ``+``; an operator in another schema (``OPERATOR(public.%)``) or a symbol
    core Postgres does not define (``<%``, ``<->``) is an extension's function and needs the database's
    ``extra_functions`` (``"public.%"`` or the bare symbol); ``%`` between two values that are not visibly
    numbers may be pg_trgm's similarity test and is refused too.
    """
    parts = names(op.get("name"))
    symbol = parts[-1] if parts else ""
    full = ".".join(parts)
    shown = f"OPERATOR({full})" if len(parts) > 1 else f"the {symbol} operator"
    extra = policy.extra_functions
    if full in extra or (len(parts) == 1 and symbol in extra):
        return None
    if parts[:-1] not in ([], ["pg_catalog"]) or symbol not in OPERATORS:
        return Finding("function_not_allowed", f"{shown} is not a built-in operator of the allowlist (a DBA can "
                       "add it to the database's extra_functions).", shown, position)
    if symbol in NUMERIC_ONLY_OPERATORS and not (
            _numeric(op.get("lexpr")) or _numeric(op.get("rexpr"))):
        return Finding("function_not_allowed", f"{shown} between values that are not visibly numbers may run an "
                       "extension's function (pg_trgm's similarity); cast an operand to a number type.", shown,
                       position)
    return None


_NUMBER_TYPES = frozenset({"int2", "int4", "int8", "smallint", "integer", "int", "bigint", "numeric", "decimal",
                           "float4", "float8", "real", "double", "money"})
_NUMBER_FUNCTIONS = frozenset({"count", "length", "char_length", "character_length", "octet_length", "extract",
                               "date_part", "abs", "round", "floor", "ceil", "ceiling", "trunc", "mod", "sum", "avg",
                               "row_number", "rank", "dense_rank", "ntile", "strpos", "position", "ascii",
                               "array_length", "cardinality", "width_bucket", "div", "sign", "random"})


def _numeric(node: object) -> bool:
    kind, body = unwrap(node)
    if kind == "A_Const":
        return "ival" in body or "fval" in body
    if kind == "A_ArrayExpr":  # x % ANY (ARRAY[2, 3])
        return any(_numeric(e) for e in body.get("elements", ()))
    if kind == "TypeCast":
        return (names(body.get("typeName", {}).get("names")) or [""])[-1].lower() in _NUMBER_TYPES
    if kind == "FuncCall":
        return (names(body.get("funcname")) or [""])[-1].lower() in _NUMBER_FUNCTIONS
    if kind == "A_Expr" and body.get("kind") == "AEXPR_OP" and names(body.get("name"))[-1:] in (["+"], ["-"],
                                                                                                   ["*"], ["/"]):
        return _numeric(body.get("lexpr")) or _numeric(body.get("rexpr"))
    return False
