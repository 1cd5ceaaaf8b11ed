"""The optional LLM judge: does a result that passed the cheap checks answer the question?

Enabled per database (``ask.llm_judge``). A judge that cannot be reached or answers in an unreadable
way adds no finding: the judge may only add doubt, never take the answer away.
"""

from __future__ import annotations

import re

from gateway import errors
from gateway.execute import QueryResult
from gateway.findings import Finding
from gateway.llm.client import LLM, LLMReply
from gateway.observability.logging import get_logger
from gateway.pipeline import prompts
from gateway.pipeline.generate import preview_rows, question_block

log = get_logger(__name__)
_VERDICT = re.compile(r"<verdict>\s*(yes|no)\s*</verdict>", re.IGNORECASE)
_REASON = re.compile(r"<reason>(.*?)</reason>", re.IGNORECASE | re.DOTALL)


def judge_messages(question: str, evidence: str | None, sql: str, result: QueryResult) -> list[dict[str, str]]:
    columns = ", ".join(c.name for c in result.columns)
    user = "\n\n".join([
        question_block(question, evidence),
        f"## SQL\n```sql\n{sql}\n```",
        f"## Result\n{result.row_count}{' or more' if result.truncated else ''} row(s); columns: {columns}\n"
        + preview_rows(result.rows, limit=10),
    ])
    return [{"role": "system", "content": prompts.JUDGE_SYSTEM}, {"role": "user", "content": user}]


async def judge(llm: LLM, question: str, evidence: str | None, sql: str, result: QueryResult, *,
                model: str, deadline: float) -> tuple[Finding | None, LLMReply | None]:
    try:
        reply = await llm.complete(judge_messages(question, evidence, sql, result), purpose="judge", model=model,
                                   temperature=0.0, deadline=deadline)
    except errors.GatewayError as exc:
        log.info("judge_skipped", error=exc.code)
        return None, None
    verdict = _VERDICT.search(reply.text)
    if verdict is None or verdict.group(1).lower() == "yes":
        return None, reply
    reason = _REASON.search(reply.text)
    message = reason.group(1).strip() if reason else "the reviewer judged that the result does not answer the question"
    return Finding("llm_judge", message), reply

