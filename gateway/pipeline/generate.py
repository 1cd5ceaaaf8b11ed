"""Generation: ask the LLM for SQL answering a question, and read the SQL out of its answer.

Models answer in many shapes, so :func:`extract_sql` accepts, in this order: ``<sql>...</sql>`` tags (the
last pair wins: models sometimes quote SQL while thinking), fenced code blocks (```sql or plain ```) and bare
SQL starting with a query keyword. Statement boundaries are found with sqlglot's tokenizer, never with
text patterns: a trailing ``;`` is dropped only when the text holds exactly one statement, so that
``SELECT 1; DROP TABLE t`` reaches the safety check whole and is blocked there.

>>> extract_sql("Here you go: <sql>SELECT 1;</sql>")
'SELECT 1'
>>> extract_sql("```sql\\nSELECT a FROM t\\n```")
'SELECT a FROM t'
>>> extract_sql("SELECT 1; DELETE FROM t;")
'SELECT 1; DELETE FROM t;'
>>> extract_sql("I cannot answer that.") is None
True
>>> normalize_sql("select  a from T -- note") == normalize_sql("SELECT a\\nFROM T")
True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType  # type: ignore[attr-defined]

from gateway.context.model import Context
from gateway.llm.client import LLM, LLMReply
from gateway.llm.untrusted import data_block
from gateway.pipeline import prompts
from gateway.pipeline.clarify import Clarification, parse_clarification, without_clarification

_TAGGED = re.compile(r"<sql>(.*?)</sql>", re.IGNORECASE | re.DOTALL)
_UNCLOSED_TAG = re.compile(r"<sql>(.*)\Z", re.IGNORECASE | re.DOTALL)
_FENCED = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.DOTALL)
_QUERY_START = ("select", "with", "values", "table", "explain", "(")
_LITERAL_TYPES = frozenset({TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.HEREDOC_STRING,
                            TokenType.IDENTIFIER, TokenType.BIT_STRING, TokenType.HEX_STRING,
                            TokenType.BYTE_STRING, TokenType.RAW_STRING})


@dataclass(frozen=True, slots=True)
class Drafted:
    """What one LLM call produced: the SQL it contains (None when none could be read) and the reply."""

    sql: str | None
    reply: LLMReply
    clarification: Clarification | None = None  # a <clarify> block, read only where the prompt offered one


def extract_sql(text: str) -> str | None:
    """The SQL in an LLM answer, or None when there is none (a ``<clarify>`` question is never read as SQL)."""
    text = without_clarification(text)
    candidates = [m.group(1) for m in _TAGGED.finditer(text)]
    if not candidates:
        unclosed = _UNCLOSED_TAG.search(text)  # a reply cut off by the token limit
        candidates = [unclosed.group(1)] if unclosed else []
    if not candidates:
        candidates = [m.group(2) for m in _FENCED.finditer(text) if m.group(1).lower() in {"", "sql", "postgresql",
                                                                                           "postgres", "pgsql"}]
    if not candidates:
        bare = _bare_sql(text)
        candidates = [bare] if bare else []
    for candidate in reversed(candidates):
        sql = strip_trailing_semicolons(candidate.strip())
        if sql:
            return sql
    return None


def _bare_sql(text: str) -> str | None:
    """From the first line that starts like a query to the end of that paragraph."""
    lines = text.strip().splitlines()
    for i, line in enumerate(lines):
        head = line.strip().lower()
        if head.startswith("final answer:"):
            head = head[len("final answer:"):].strip()
            lines[i] = line.strip()[len("final answer:"):]
        if head.startswith(_QUERY_START) and (head[:1] == "(" or head.split(None, 1)[0] in _QUERY_START):
            block: list[str] = []
            for rest in lines[i:]:
                if not rest.strip() and block:
                    break
                block.append(rest)
            return "\n".join(block)
    return None


def strip_trailing_semicolons(sql: str) -> str:
    """Drop ``;`` at the end when nothing but other ``;`` follows the only statement."""
    if not sql.rstrip().endswith(";"):
        return sql  # nothing to strip: skip the tokenizer
    try:
        tokens = sqlglot.tokenize(sql, read="postgres")
    except TokenError:
        return sql  # unterminated string or similar: let the safety check report it
    last = len(tokens)
    while last and tokens[last - 1].token_type == TokenType.SEMICOLON:
        last -= 1
    if last == len(tokens) or any(t.token_type == TokenType.SEMICOLON for t in tokens[:last]):
        return sql
    return sql[: tokens[last].start].rstrip()


def normalize_sql(sql: str) -> str:
    """A key under which the same statement compares equal regardless of case, spacing and comments.

    Literals and quoted identifiers keep their exact text: ``'Cancelled'`` and ``'cancelled'`` differ.
    """
    try:
        tokens = sqlglot.tokenize(sql, read="postgres")
    except TokenError:
        return " ".join(sql.split())
    return " ".join(
        f"{t.token_type.name}:{t.text}" if t.token_type in _LITERAL_TYPES else t.text.lower() for t in tokens
    )


def context_block(ctx: Context, *, with_examples: bool) -> str:
    """The schema, rules, stored values and examples, as the prompts show them.

    What the database holds (schema comments, sample and stored values) and what clients wrote (examples)
    are data blocks; the administrators' rules are instructions and stay outside (``gateway.llm.untrusted``).
    """
    parts = [f"## Database schema\n{data_block('schema', ctx.schema_text.strip())}",
             f"## Rules from the database's administrators\n{(ctx.rules_text or '').strip() or prompts.NO_RULES}"]
    hints = render_value_hints(getattr(ctx, "value_hints", None))
    if hints:
        parts.append(f"## Matching stored values\n{data_block('stored_values', hints)}")
    examples = list(getattr(ctx, "examples", None) or []) if with_examples else []
    if examples:
        shown = "\n\n".join(f"Question: {e.question}\n<sql>{e.sql}</sql>" for e in examples)
        parts.append(f"## Verified examples on this database\n{data_block('examples', shown)}")
    return "\n\n".join(parts)


def render_value_hints(hints: Any) -> str:
    if not hints:
        return ""
    if isinstance(hints, str):
        return hints.strip()
    render = getattr(hints, "render", None)
    if callable(render):
        return str(render()).strip()
    lines = []
    for hint in hints:
        as_text = getattr(hint, "as_text", None)  # gateway.context.ValueHint
        lines.append(f"- {as_text() if callable(as_text) else hint}")
    return "\n".join(lines)


def question_block(question: str, evidence: str | None) -> str:
    return f"## Question\n{question.strip()}\n\n## Evidence\n{(evidence or '').strip() or prompts.NO_EVIDENCE}"


def generation_messages(ctx: Context, question: str, evidence: str | None, *, earlier: str = "",
                        clarify: bool = False) -> list[dict[str, str]]:
    """``earlier``: the conversation's earlier turns (``gateway.pipeline.conversation.render``); ``clarify``:
    offer a clarifying question instead of SQL (``gateway.pipeline.clarify``)."""
    sections = [context_block(ctx, with_examples=True)]
    if earlier:
        sections.append(earlier)
    sections += [question_block(question, evidence), "Give the SQL between <sql> and </sql>."]
    if clarify:
        sections.append(prompts.CLARIFY_OFFER)
    return [{"role": "system", "content": prompts.GENERATE_SYSTEM}, {"role": "user", "content": "\n\n".join(sections)}]


async def generate(llm: LLM, ctx: Context, question: str, evidence: str | None, *, model: str,
                   temperature: float | None, deadline: float, earlier: str = "", clarify: bool = False) -> Drafted:
    """First attempt: one LLM call; the SQL may be None (the caller records a ``no_sql`` finding), and when
    ``clarify`` offered it and no SQL came back, the reply may be a clarifying question."""
    reply = await llm.complete(generation_messages(ctx, question, evidence, earlier=earlier, clarify=clarify),
                               purpose="generate", model=model, temperature=temperature, deadline=deadline)
    sql = extract_sql(reply.text)
    asked = parse_clarification(reply.text) if clarify and sql is None else None
    return Drafted(sql, reply, asked)


def preview_rows(rows: list[list[Any]], limit: int = 5, width: int = 200) -> str:
    """A few result rows as JSON lines, each cut to ``width`` characters (prompts stay small), as a data block:
    a value that says "ignore the previous instructions" is a value (``gateway.llm.untrusted``)."""
    out = []
    for row in rows[:limit]:
        line = json.dumps(row, default=str, ensure_ascii=False)
        out.append(line if len(line) <= width else line[: width - 3] + "...")
    return data_block("result_rows", "\n".join(out))
