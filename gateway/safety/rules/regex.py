"""Regular expressions that can take the database server's CPU: backreferences and nested bounded repeats.

Postgres's regex engine runs most patterns as an automaton in linear time, but a backreference (``\\1``)
makes it backtrack: ``repeat('b', 40009) ~ '^(bb+)\\1+$'`` runs for minutes. Nested bounded repetitions
(``((a{255}){255}){255}``) grow the automaton multiplicatively and take a second to compile before
failing. Both are refused wherever a pattern goes: ``~ ~* !~ !~*`` (also with ANY/ALL), ``SIMILAR TO``,
the ``regexp_*`` functions, ``substring(... from pattern)`` / ``substring(... similar ...)`` and
jsonpath ``like_regex`` in a constant path.

A pattern that is not a constant (a column, a subquery) cannot be analysed, and the text of a table is
data an attacker may control; it is refused (``regex_not_constant``) unless the database's policy sets
``allow_dynamic_regex``. Patterns built from constants (``'(b+)' || chr(92) || '1'``) are folded first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.safety import fold
from gateway.safety.context import Context
from gateway.safety.model import Finding
from gateway.safety.policy import Policy
from gateway.safety.tree import names, unwrap

# Functions whose second argument is a POSIX regular expression.
PATTERN_FUNCTIONS = frozenset({
    "regexp_count", "regexp_instr", "regexp_like", "regexp_match", "regexp_matches", "regexp_replace",
    "regexp_split_to_array", "regexp_split_to_table", "regexp_substr",
})
_JSONPATH_FUNCTIONS = frozenset({
    "jsonb_path_exists", "jsonb_path_match", "jsonb_path_query", "jsonb_path_query_array",
    "jsonb_path_query_first", "jsonb_path_exists_tz", "jsonb_path_match_tz", "jsonb_path_query_tz",
    "jsonb_path_query_array_tz", "jsonb_path_query_first_tz",
})
MAX_NESTED_REPEAT = 1000


def regex(ctx: Context, policy: Policy) -> Iterator[Finding]:
    for clause, pattern, location, jsonpath in _patterns(ctx):
        if jsonpath:
            text = fold.text(_strip_jsonpath_cast(pattern))
            if text is None:
                if _tsquery(pattern):
                    continue  # tsvector @@ tsquery: a text search, no regular expression
                if not policy.allow_dynamic_regex:
                    yield Finding("regex_not_constant", f"The jsonpath of {clause} is not a constant, so a "
                                  "like_regex in it cannot be checked for catastrophic constructs; use a literal "
                                  "path (or the database's policy may set allow_dynamic_regex).", clause,
                                  ctx.position(location))
                continue
            for inner in _like_regexes(text):
                yield from _judge_text(ctx, clause, inner, location)
            continue
        for node in _alternatives(pattern):
            text = fold.text(node)
            if text is None:
                if not policy.allow_dynamic_regex:
                    yield Finding("regex_not_constant", f"The pattern of {clause} is not a constant, so it "
                                  "cannot be checked for catastrophic constructs; use a literal pattern (or the "
                                  "database's policy may set allow_dynamic_regex).", clause,
                                  ctx.position(location))
                continue
            yield from _judge_text(ctx, clause, text, location)


def _judge_text(ctx: Context, clause: str, text: str, location: object) -> Iterator[Finding]:
    danger = catastrophic(text)
    if danger:
        yield Finding("regex_too_costly", f"The pattern of {clause} uses {danger}, which makes the regex engine "
                      "backtrack or grow without bound; rewrite it without that construct.", clause,
                      ctx.position(location))


def _patterns(ctx: Context) -> Iterator[tuple[str, Any, object, bool]]:
    """(clause, pattern node, location, is_jsonpath) for every place a regular expression goes."""
    for expr in ctx.tree.matches:
        op = names(expr.get("name"))[-1]
        right = expr.get("rexpr")
        if expr.get("lexpr") is None or right is None:
            continue  # prefix ~ is bitwise NOT
        if op in ("@?", "@@"):
            yield f"the {op} operator", right, expr.get("location"), True
            continue
        kind, body = unwrap(right)
        if expr.get("kind") == "AEXPR_SIMILAR" or (kind == "FuncCall" and _name(body) == "similar_to_escape"):
            clause = "SIMILAR TO"
            if kind == "FuncCall" and _name(body) == "similar_to_escape" and body.get("args"):
                right = body["args"][0]
        else:
            clause = f"the {op} operator"
        yield clause, right, expr.get("location"), False
    for call, _ in ctx.tree.funcs:
        name = _name(call)
        args = call.get("args", ())
        if name in PATTERN_FUNCTIONS and len(args) >= 2:
            yield f"{name}()", args[1], call.get("location"), False
        elif name == "substring" and len(args) >= 2 and _is_pattern_substring(args):
            yield "substring()", args[1], call.get("location"), False
        elif name in _JSONPATH_FUNCTIONS and len(args) >= 2:
            yield f"{name}()", args[1], call.get("location"), True


_TSQUERY_FUNCTIONS = frozenset({"to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery",
                                "querytree", "numnode", "ts_rewrite", "tsquery_phrase"})


def _strip_jsonpath_cast(node: Any) -> Any:
    """'$.a ? (@ like_regex "x")'::jsonpath is the text it casts."""
    kind, body = unwrap(node)
    while kind == "TypeCast" and (names(body.get("typeName", {}).get("names")) or [""])[-1].lower() == "jsonpath":
        node = body.get("arg")
        kind, body = unwrap(node)
    return node


def _tsquery(node: Any) -> bool:
    kind, body = unwrap(node)
    if kind == "TypeCast":
        return (names(body.get("typeName", {}).get("names")) or [""])[-1].lower() == "tsquery"
    if kind == "FuncCall":
        return _name(body) in _TSQUERY_FUNCTIONS
    if kind == "A_Expr" and names(body.get("name"))[-1:] in (["&&"], ["||"]) and body.get("lexpr") is not None:
        return _tsquery(body.get("lexpr")) or _tsquery(body.get("rexpr"))  # q1 && q2, q1 || q2
    return False


def _is_pattern_substring(args: list[Any]) -> bool:
    # substring(s from 2 for 3) takes integers; substring(s from 'a.c') and (s similar 'a%' escape '#')
    # take text. A non-constant second argument is most often a position, so only text constants count.
    return any(fold.number(a) is None and fold.text(a) is not None for a in args[1:])


def _alternatives(node: Any) -> list[Any]:
    """The patterns of ``x ~ ANY (ARRAY['a', 'b'])``: each element; otherwise the node itself."""
    kind, body = unwrap(node)
    if kind == "A_ArrayExpr":
        return list(body.get("elements", ()))
    if kind == "FuncCall" and _name(body) == "similar_to_escape" and body.get("args"):
        return [body["args"][0]]
    return [node]


def _name(call: dict[str, Any]) -> str:
    return (names(call.get("funcname")) or [""])[-1].lower()


def catastrophic(pattern: str) -> str | None:
    """Why a POSIX (ARE) pattern is too costly to run, or None.

    >>> catastrophic('^(bb+)\\\\1+$'), catastrophic('((a{255}){255}){255}'), catastrophic('^[a-z]+@[a-z.]+$')
    ('a backreference (\\\\1)', 'nested repetitions of up to 16,581,375 copies', None)
    """
    if pattern.startswith("***="):
        return None  # the rest is a literal string
    if pattern.startswith("***:"):
        pattern = pattern[4:]
    if pattern.startswith("(?"):
        end = pattern.find(")")
        if end > 0 and "q" in pattern[2:end]:
            return None  # (?q): literal
    stack: list[float] = [1.0]  # largest repetition product inside each open group
    last_atom = 1.0  # repetition product of the atom just closed (a group) or read (1)
    i, worst = 0, 1.0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            if pattern[i + 1] in "123456789":
                return f"a backreference (\\{pattern[i + 1]})"
            i, last_atom = i + 2, 1.0
            continue
        if ch == "[":
            i, last_atom = _skip_bracket(pattern, i), 1.0
            continue
        if ch == "(":
            stack.append(1.0)
            i, last_atom = i + 1, 1.0
            continue
        if ch == ")" and len(stack) > 1:
            last_atom = stack.pop()
            stack[-1] = max(stack[-1], last_atom)
            i += 1
            continue
        if ch == "{":
            close = pattern.find("}", i)
            bound = _bound(pattern[i + 1:close]) if close > 0 else None
            if bound is not None:
                product = last_atom * bound
                stack[-1] = max(stack[-1], product)
                worst = max(worst, product)
                i = close + 1
                continue
        i, last_atom = i + 1, 1.0
    if worst > MAX_NESTED_REPEAT:
        return f"nested repetitions of up to {worst:,.0f} copies"
    return None


def _skip_bracket(pattern: str, start: int) -> int:
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "[" and i + 1 < len(pattern) and pattern[i + 1] in ":.=":
            end = pattern.find(pattern[i + 1] + "]", i + 2)
            i = end + 2 if end > 0 else i + 1
        elif pattern[i] == "\\":
            if i + 1 < len(pattern) and pattern[i + 1] in "123456789":
                return i  # let the main loop see the backreference-looking escape
            i += 2
        else:
            i += 1
    return i + 1


def _bound(spec: str) -> float | None:
    parts = spec.split(",")
    if len(parts) > 2 or not all(p.strip().isdigit() or p.strip() == "" for p in parts) or not parts[0].strip():
        return None
    return float(max(int(p) for p in parts if p.strip()))


def _like_regexes(jsonpath: str) -> list[str]:
    """The pattern strings after ``like_regex`` in a jsonpath text (JSON-style double-quoted strings)."""
    out: list[str] = []
    at = 0
    while True:
        at = jsonpath.find("like_regex", at)
        if at < 0:
            return out
        quote = jsonpath.find('"', at)
        if quote < 0:
            return out
        chars, i = [], quote + 1
        while i < len(jsonpath) and jsonpath[i] != '"':
            if jsonpath[i] == "\\" and i + 1 < len(jsonpath):
                i += 1
            chars.append(jsonpath[i])
            i += 1
        out.append("".join(chars))
        at = i
