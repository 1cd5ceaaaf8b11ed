"""Templates over MCP: each one a tool (the opt-in ``templates`` tool group) and a prompt (its starter question).

Tools are named ``template_<name>``, listed only with ``templates.mcp_tools`` on and only the templates the
caller may use (``Gateway.templates`` decides), with one string argument per parameter (an ``enum`` of the
known values the caller may read, when the column has them). A call is ``Gateway.run_template``: the
caller's role and row policy apply, and a value outside the column's domain is a tool error with the
``template_value_invalid`` problem and its suggestions. Prompts are listed whatever the setting: the
templates' example questions are the starter questions of an MCP client.
"""

from __future__ import annotations

from typing import Any

from mcp import types

from gateway import errors
from gateway.auth.scopes import Operation
from gateway.mcp.results import DATA_NOTE, ok
from gateway.mcp.tools import ASK_OUT, Call
from gateway.observability.logging import get_logger
from gateway.pipeline import Attempt

log = get_logger(__name__)

PREFIX = "template_"
GROUP = "templates"


def enabled(call_gateway: Any) -> bool:
    return bool(call_gateway.settings.templates.mcp_tools)


async def tools(gateway: Any, principal: Any) -> list[types.Tool]:
    """One tool per template the caller may use (none with the group off or without a store)."""
    if not enabled(gateway) or gateway.state.store is None or not gateway.permits(principal, Operation.ASK):
        return []
    out = []
    for t in await _templates(gateway, principal):
        properties: dict[str, Any] = {}
        for p in t["parameters"]:
            prop: dict[str, Any] = {"type": "string", "description": f"A value of {p['column']} ({p['type']})."}
            if p.get("default") is not None:
                prop["default"] = p["default"]
            if p.get("values"):
                prop["enum"] = p["values"]
            properties[p["name"]] = prop
        questions = "; ".join(t["questions"])
        out.append(types.Tool(
            name=PREFIX + t["name"], title=f"Trusted: {t['name']}",
            description=(t["description"] + " " if t["description"] else "") + f"A DBA-approved query on "
            f"{t['database']}, answered without the LLM and labelled trusted. It answers: {questions}.",
            input_schema={"type": "object", "properties": properties, "additionalProperties": False},
            output_schema=ASK_OUT,
            annotations=types.ToolAnnotations(title=t["name"], read_only_hint=True, destructive_hint=False,
                                              idempotent_hint=True, open_world_hint=False),
            _meta={"group": GROUP}))
    return out


async def _templates(gateway: Any, principal: Any) -> list[dict[str, Any]]:
    """The templates the caller may use; none while the store is down (the other tools still list)."""
    try:
        found: list[dict[str, Any]] = await gateway.templates(principal=principal)
    except errors.GatewayError as exc:
        log.warning("mcp_templates_unavailable", code=exc.code)
        return []
    return found


async def call(call: Call, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run the template a ``template_<name>`` tool stands for."""
    if not enabled(call.gateway):
        raise errors.NotFound(f"no tool named {name!r}; see tools/list", tool=name)
    if any(not isinstance(v, str | int | float | bool) for v in arguments.values()):
        raise errors.InvalidRequest("template arguments are strings (numbers and booleans are read as text)")

    async def on_attempt(attempt: Attempt) -> None:
        await call.progress(1, 1, f"template {name.removeprefix(PREFIX)}: {'passed' if attempt.passed else 'ran'}")

    answer = await call.gateway.run_template(name.removeprefix(PREFIX), {k: str(v) for k, v in arguments.items()},
                                             request_id=call.request_id, principal=call.principal,
                                             on_attempt=on_attempt)
    data = answer.as_dict()
    payload = {
        **{k: data[k] for k in ("status", "database", "sql", "columns", "rows", "row_count", "truncated",
                                "findings", "stop_reason", "guideline_version", "request_id")},
        "attempts": [{"n": a["n"], "source": a["source"], "sql": a["sql"], "passed": a["passed"],
                      "codes": list(dict.fromkeys(f["code"] for f in a["findings"]))} for a in data["attempts"]],
        "trusted": data.get("trusted"), "note": DATA_NOTE,
    }
    return ok(f"Trusted answer from template {answer.trusted['template'] if answer.trusted else name}: status "
              f"{answer.status}, {data['row_count']} row(s).", payload, label="answer")


async def prompts(gateway: Any, principal: Any) -> list[types.Prompt]:
    """The templates' questions as prompts, one per template the caller may use."""
    if gateway.state.store is None or not gateway.permits(principal, Operation.SCHEMA):
        return []
    return [types.Prompt(
        name=PREFIX + t["name"], title=t["starter"] or t["questions"][0],
        description=f"A trusted question on {t['database']}: {t['questions'][0]}",
        arguments=[types.PromptArgument(name=p["name"], required=p.get("default") is None,
                                        description=f"A value of {p['column']}"
                                        + (f" (default {p['default']})" if p.get("default") is not None else ""))
                   for p in t["parameters"]])
        for t in await _templates(gateway, principal)]


async def prompt(gateway: Any, principal: Any, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    """The starter question with ``arguments`` in its slots, as a user message to ask on the template's database."""
    template = await gateway.template(name.removeprefix(PREFIX), principal=principal)
    values = {p["name"]: (arguments or {}).get(p["name"], p.get("default")) for p in template["parameters"]}
    missing = [k for k, v in values.items() if v is None]
    if missing:
        raise errors.InvalidRequest(f"the prompt needs {', '.join(missing)}", missing=missing)
    question = template["questions"][0]
    for key, value in values.items():
        question = question.replace("{" + key + "}", str(value))
    return types.GetPromptResult(
        description=f"Trusted question on {template['database']} (template {template['name']})",
        messages=[types.PromptMessage(role="user", content=types.TextContent(
            type="text", text=f"Ask the database {template['database']}: {question}?"))])
