"""Helpers for the trusted-answer tests: the demo database, a store, API keys and the scripted LLM over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from gateway.auth import new_token
from gateway.pipeline import prompts
from gateway.settings import AuthSettings, Settings, StoreSettings
from gateway.state import GatewayState
from gateway.store import api_keys
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM
from tests.magic.helpers import settings_for
from tests.serving import in_process as gateway  # noqa: F401 - the tests import it from here

STATUS_TEMPLATE: dict[str, Any] = {
    "database": "demo", "name": "orders_by_status", "description": "Orders in one status",
    "sql": "SELECT count(*) AS orders FROM orders WHERE status = $1",
    "parameters": [{"name": "status", "column": "orders.status", "default": "shipped"}],
    "questions": ["How many orders are {status}?", "Count the {status} orders"],
}
SEGMENT_TEMPLATE: dict[str, Any] = {
    "database": "demo", "name": "customers_by_region_segment",
    "sql": "SELECT count(*) AS customers FROM customers c JOIN regions r ON r.region_id = c.region_id "
           "WHERE r.name = $1 AND c.segment = $2",
    "parameters": [{"name": "region", "column": "regions.name", "default": "North America"},
                   {"name": "segment", "column": "customers.segment", "default": "Enterprise"}],
    # the defaults spelled in the question become its slots
    "questions": ["How many Enterprise customers are in North America?"],
}
GENERATED = "SELECT 42 AS from_the_llm"


def is_generation(r: LLMRequest) -> bool:
    return r.system == prompts.GENERATE_SYSTEM


def script_llm(llm: ScriptedLLM) -> None:
    """Any generation answers a constant: an answer the template did not give is easy to tell."""
    llm.add(lambda r: f"<sql>{GENERATED}</sql>" if is_generation(r) else None)


def settings(demo_dsn: str, store_dsn: str, llm: ScriptedLLM | None, tmp: Path, *, auth: bool = True,
             **templates: Any) -> Settings:
    out = settings_for(demo_dsn, store_dsn, llm, tmp)
    out.store = StoreSettings(dsn=store_dsn)
    if auth:
        out.auth = AuthSettings(enabled=True, cache_ttl_s=0.0)
    out.templates = out.templates.model_copy(update=templates)
    return out


async def make_key(state: GatewayState, role: str, databases: tuple[str, ...] = ("*",),
                   pg_role: str | None = None) -> dict[str, str]:
    assert state.store is not None
    token = new_token()
    await api_keys.create(state.store.pool, key_id=token.key_id, name=f"{role}-{token.key_id}", role=role,
                          databases=list(databases), pg_role=pg_role, secret_sha256=token.secret_sha256)
    return {"Authorization": f"Bearer {token.token}"}


async def create(http: httpx.AsyncClient, key: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    response = await http.post("/v1/templates", headers=key, json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def ask(http: httpx.AsyncClient, key: dict[str, str], question: str) -> dict[str, Any]:
    response = await http.post("/v1/ask", headers=key, json={"database": "demo", "question": question})
    assert response.status_code == 200, response.text
    return dict(response.json())


def sse_events(text: str) -> list[tuple[str, Any]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        out.append((lines["event"], json.loads(lines["data"])))
    return out
