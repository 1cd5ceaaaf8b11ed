"""Reflection: the LLM reviews the earlier attempts and their findings and returns revised SQL.

The prompt carries the question and evidence, the pruned schema, the rules, every earlier attempt (SQL,
findings, a few result rows) and, when the policy's guideline scenario says so, the active guideline.
Database messages are shown with hidden tables and columns masked: a Postgres hint such as
"Perhaps you meant to reference the column customers.ssn" must not teach the model a hidden name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gateway.context.model import Context
from gateway.findings import ALWAYS_REFLECT, Finding
from gateway.llm.client import LLM
from gateway.llm.untrusted import data_block
from gateway.pipeline import prompts
from gateway.pipeline.generate import Drafted, context_block, extract_sql, preview_rows, question_block
from gateway.pipeline.respond import Attempt
from gateway.safety import Policy
from gateway.settings import AskPolicy
from gateway.sql.masking import hidden_names_of, mask  # the one masking function


def guideline_applies(policy: AskPolicy, trigger_codes: Sequence[str]) -> bool:
    """The MAGIC scenarios: on errors only, on every reflection, or on all SQL (reviews included)."""
    if policy.guideline_scenario == "errors_only":
        return any(code in ALWAYS_REFLECT for code in trigger_codes)
    return True


def hidden_names(policy: Policy) -> list[str]:
    return hidden_names_of(policy.hidden_columns, policy.hidden_tables)


def _finding_lines(findings: Iterable[Finding], names: Sequence[str]) -> str:
    lines = []
    for f in findings:
        extras = []
        if f.detail.get("sqlstate"):
            extras.append(f"SQLSTATE {f.detail['sqlstate']}")
        if f.detail.get("codes"):
            extras.append("safety codes " + ", ".join(f.detail["codes"]))
        if f.detail.get("position"):
            extras.append(f"at character {f.detail['position']}")
        head = f"- {f.code}" + (f" ({'; '.join(extras)})" if extras else "")
        line = f"{head}: {mask(f.message, names)}"
        if f.detail.get("hint"):
            line += f"\n  hint: {mask(str(f.detail['hint']), names)}"
        lines.append(line)
    return "\n".join(lines) or "- none: validation found nothing wrong"


def _attempt_block(attempt: Attempt, names: Sequence[str]) -> str:
    head = f"### Attempt {attempt.n} ({attempt.source})"
    sql = f"```sql\n{attempt.sql}\n```" if attempt.sql else "(no SQL could be read from the answer)"
    # Findings quote database messages, which can quote values: data, like the rows below.
    parts = [head, sql, "Findings:\n" + data_block("findings", _finding_lines(attempt.findings, names))]
    if attempt.result is not None:
        result = attempt.result
        columns = ", ".join(c.name for c in result.columns)
        more = " or more" if result.truncated else ""
        parts.append(f"Result: {result.row_count}{more} row(s); columns: {columns}")
        if result.rows:
            parts.append("First rows:\n" + preview_rows(result.rows))
    elif attempt.sql and "blocked" in attempt.codes:
        parts.append("Result: not run (blocked).")
    return "\n".join(parts)


def reflection_messages(ctx: Context, question: str, evidence: str | None, attempts: Sequence[Attempt],
                        trigger_codes: Sequence[str], *, guideline: str | None,
                        policy: Policy, earlier: str = "") -> list[dict[str, str]]:
    names = hidden_names(policy)
    sections = [context_block(ctx, with_examples=True)]
    if guideline:
        sections.append("## Guideline: reminders from mistakes made before\n" + guideline.strip())
    if earlier:  # a follow-up ("and by month?") means nothing without the turns it follows
        sections.append(earlier)
    sections.append(question_block(question, evidence))
    sections.append("## Earlier attempts\n" + "\n\n".join(_attempt_block(a, names) for a in attempts))
    advice = [f"- {prompts.FINDING_ADVICE[c]}" for c in trigger_codes if c in prompts.FINDING_ADVICE]
    if advice:
        sections.append("## What needs attention in the latest attempt\n" + "\n".join(advice))
    sections.append("Reason inside <thinking>...</thinking>, then give the revised SQL between <sql> and </sql>.")
    return [{"role": "system", "content": prompts.REFLECT_SYSTEM}, {"role": "user", "content": "\n\n".join(sections)}]


async def reflect(llm: LLM, ctx: Context, question: str, evidence: str | None, attempts: Sequence[Attempt],
                  trigger_codes: Sequence[str], *, guideline: str | None, policy: Policy, model: str,
                  temperature: float | None, deadline: float, earlier: str = "") -> Drafted:
    messages = reflection_messages(ctx, question, evidence, attempts, trigger_codes, guideline=guideline,
                                   policy=policy, earlier=earlier)
    reply = await llm.complete(messages, purpose="reflect", model=model, temperature=temperature, deadline=deadline)
    return Drafted(extract_sql(reply.text), reply)
