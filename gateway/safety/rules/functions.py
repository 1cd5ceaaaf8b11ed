"""Functions: refused with a reason when known dangerous, otherwise allowed only from the allowlist."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gateway.safety.context import Context
from gateway.safety.functions import ALLOWED, WHOLE_ROW_FUNCTIONS, blocked_reason
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import names


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
    for op in ctx.tree.operators:
        # An operator is a function call in disguise; only built-in ones (pg_catalog) are known to be pure.
        parts = names(op.get("name"))
        if parts[:-1] != ["pg_catalog"]:
            shown = f"OPERATOR({'.'.join(parts)})"
            yield Finding("function_not_allowed", f"{shown} is not a built-in operator.", shown,
                          ctx.position(op.get("location")))
