"""Property-based run of the whole HTTP API from its own OpenAPI schema (schemathesis): whatever a client
sends, the gateway never answers 5xx, and every answer matches what the schema documents.

In-process over ASGI (schemathesis starts the app's real lifespan once): the demo database on the real
Postgres, a store database of its own, and a scripted LLM over real HTTP, so every route is reachable and
a 5xx could only be a bug. Examples are limited per operation to keep the run well under a minute.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.python import asgi as schemathesis_asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from gateway.api.app import create_app
from gateway.settings import (
    AuthSettings,
    DatabaseSettings,
    Limits,
    LLMSettings,
    MagicSettings,
    Settings,
    StoreSettings,
)
from gateway.testing.scripted_llm import ScriptedLLM

EXAMPLES_PER_OPERATION = 30
CHECKS = (not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance)


@pytest.fixture(scope="module")
def store_database(pg: Any) -> Iterator[str]:
    import asyncio

    name = f"nl2sql_test_schemathesis_{uuid.uuid4().hex[:8]}"

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(pg.admin_dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    yield pg.dsn(name)
    asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="module")
def api_schema(demo_dsn: str, store_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # A copy of the rules: the run also sends rules edits (PUT /v1/databases/{name}/rules/console), which write.
    rules = tmp_path_factory.mktemp("rules")
    shutil.copy(Path(__file__).resolve().parents[2] / "rules" / "demo.yaml", rules / "demo.yaml")
    with ScriptedLLM(default="<sql>SELECT count(*) AS orders FROM orders</sql>") as llm:
        app = create_app(Settings(
            databases={"demo": DatabaseSettings(dsn=demo_dsn, limits=Limits(statement_timeout_ms=2000,
                                                                           max_rows=50))},
            llm=LLMSettings(base_url=llm.base_url, model="scripted-model", timeout_s=5, max_retries=0),
            store=StoreSettings(dsn=store_database),
            magic=MagicSettings(schedule=False),
            auth=AuthSettings(enabled=False),  # every route reachable (the auth tests cover keys)
            rules_dir=rules,
        ))
        try:
            yield schemathesis.openapi.from_asgi("/openapi.json", _as_localhost(app))
        finally:
            schemathesis_asgi.shutdown_lifespans()  # close the app's pools before the module's databases go


def _as_localhost(app: Any) -> Any:
    """Starlette's test client addresses every request to host ``testserver``; without API keys the gateway
    answers only loopback names (DNS-rebinding guard), so requests here name ``localhost``."""
    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [(k, v) for k, v in scope["headers"] if k != b"host"]
            scope = {**scope, "headers": [*headers, (b"host", b"localhost")]}
        await app(scope, receive, send)
    return asgi


def on_demo(case: Any) -> None:
    """Point a generated case at the configured database, so that it gets past ``unknown_database``."""
    if isinstance(case.body, dict) and "database" in case.body:
        case.body["database"] = "demo"
    if case.path_parameters and "name" in case.path_parameters:
        case.path_parameters["name"] = "demo"


def test_no_server_errors_and_answers_match_the_schema(api_schema: Any) -> None:
    # Each operation's strategies (valid and invalid requests) are driven by hypothesis directly
    # (schemathesis's pytest fixture loader does not run on pytest 9); all failures are reported together.
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:
        cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                          operation.as_strategy(GenerationMode.NEGATIVE))

        @given(case=cases, demo=st.booleans())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                  phases=[Phase.explicit, Phase.generate],  # report the failing case as found, unshrunk: fast
                  suppress_health_check=list(HealthCheck))
        def run(case: Any, demo: bool) -> None:
            if demo:
                on_demo(case)
            response = case.call()
            case.validate_response(response, checks=CHECKS)

        try:
            run()
        except Exception as exc:  # noqa: BLE001 - collected and reported together below
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)
