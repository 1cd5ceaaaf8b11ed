"""The semantic model's path of ``POST /v1/ask``: the LLM picks a metric query, the gateway writes the SQL.

When the database has a semantic model and the question's words touch one of its metrics
(:mod:`gateway.semantic.grounding`), the LLM is asked, with structured output (a JSON schema through the
openai SDK's ``response_format``), for the metrics, dimensions, filters, time grain, order and limit; the
SQL is then compiled deterministically from the model (:mod:`gateway.semantic.compile`) and checked, run
and validated like any other attempt (source ``semantic_model``). A question the catalog cannot answer
(the model says so, picks a name the model lacks, or writes something that is not a metric query) falls
through to ordinary generation; nothing is lost but one LLM call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import ValidationError

from gateway.llm import LLMClient, LLMReply
from gateway.semantic.compile import CompiledQuery, MetricQuery, SemanticQueryError, compile_query
from gateway.semantic.grounding import touched
from gateway.semantic.model import SemanticModel
from gateway.semantic.prompts import pick_messages

PURPOSE = "semantic_pick"


@dataclass(frozen=True, slots=True)
class Picked:
    reply: LLMReply
    query: MetricQuery | None
    compiled: CompiledQuery | None
    why_not: str | None = None  # why the question goes to generation instead


def response_format() -> dict[str, object]:
    """The JSON schema the LLM's answer must follow: ``{"metric_query": MetricQuery | null}``."""
    schema = MetricQuery.model_json_schema()
    defs = schema.pop("$defs", {})
    return {"type": "json_schema", "json_schema": {"name": "metric_query", "schema": {
        "type": "object", "$defs": defs, "required": ["metric_query"], "additionalProperties": False,
        "properties": {"metric_query": {"anyOf": [schema, {"type": "null"}]}}}}}


def applies(model: SemanticModel, question: str) -> bool:
    return not model.is_empty() and bool(touched(model, question))


async def pick(llm: LLMClient, model: SemanticModel, question: str, *, llm_model: str,
               deadline: float) -> Picked:
    """Ask for a metric query and compile it; ``compiled`` is None when the question goes to generation."""
    reply = await llm.complete(pick_messages(model, touched(model, question), question), purpose=PURPOSE,
                               model=llm_model, temperature=0.0, deadline=deadline,
                               response_format=response_format())
    text = reply.text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        data = json.loads(text)
        raw = data.get("metric_query") if isinstance(data, dict) else None
        if raw is None:
            return Picked(reply, None, None, "the model found no metric query for the question")
        query = MetricQuery.model_validate(raw)
        return Picked(reply, query, compile_query(model, query))
    except (ValueError, ValidationError, SemanticQueryError) as exc:
        return Picked(reply, None, None, f"no usable metric query: {str(exc).splitlines()[0]}")
