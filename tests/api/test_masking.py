"""Hidden names never leave the gateway (issue 9, item 6): real Postgres errors whose hint names them,
safety findings, /v1/check verdicts, /v1/ask traces and SSE events, and log lines."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from structlog.testing import capture_logs

from gateway.api.app import create_app
from gateway.settings import DatabaseSettings, LLMSettings, Settings
from gateway.sql.masking import drop_naming, hidden_names_of, mask
from gateway.testing.scripted_llm import ScriptedLLM

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("salary", "email")  # employees.salary, employees.email, customers.email in rules/demo.yaml


def assert_no_hidden(text: str) -> None:
    """No hidden name as a word (a client's own typo such as ``emaill`` is another word)."""
    found = [n for n in HIDDEN if re.search(rf"(?<![\w$]){n}(?![\w$])", text, re.IGNORECASE)]
    assert not found, text


@pytest.fixture
async def http(demo_dsn: str, llm: ScriptedLLM) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}, rules_dir=ROOT / "rules",
                        llm=LLMSettings(base_url=llm.base_url, model="scripted-model", timeout_s=5.0,
                                        max_retries=0))
    app = create_app(settings)
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        yield client


def test_mask_covers_every_spelling() -> None:
    names = hidden_names_of(["employees.salary", "public.customers.email"], ["audit_log"])
    text = ('Perhaps you meant to reference the column "employees.salary" or "e"."salary"; '
            '"customers"."email", public.customers.email, AUDIT_LOG, Salary, salary_band, my_email')
    masked = mask(text, names)
    assert "salary_band" in masked and "my_email" in masked  # other words stay
    assert "employees.salary" not in masked and '"email"' not in masked and "AUDIT_LOG" not in masked
    assert "Salary" not in masked and ".email" not in masked


@pytest.mark.parametrize("query, hidden", [
    ("SELECT salar FROM employees", "salary"),          # hint: Perhaps you meant ... "employees.salary"
    ("SELECT e.emial FROM employees e", "email"),        # hint: ... "e.email"
    ("SELECT c.emaill FROM customers c", "email"),
])
async def test_postgres_hints_naming_a_hidden_column_are_masked(http: httpx.AsyncClient, query: str,
                                                                hidden: str) -> None:
    with capture_logs() as logs:
        response = await http.post("/v1/sql", json={"database": "demo", "sql": query})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "query_error" and body["sqlstate"] == "42703"
    # Postgres named it in its hint: the whole sentence goes, "Perhaps you meant [hidden]" would confirm the
    # guess is close to a hidden name.
    assert body.get("hint") is None, body
    assert "Perhaps you meant" not in response.text and "[hidden]" not in response.text, body
    assert_no_hidden(response.text)
    assert_no_hidden(json.dumps(logs, default=str))


async def test_hints_naming_visible_columns_stay(http: httpx.AsyncClient) -> None:
    response = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT e.employe_id FROM employees e"})
    assert response.status_code == 422 and response.json()["sqlstate"] == "42703", response.text
    assert response.json()["hint"] == 'Perhaps you meant to reference the column "e.employee_id".'


def test_hint_sentences_naming_a_hidden_name_are_dropped_whole() -> None:
    names = hidden_names_of(["employees.salary"], [])
    assert drop_naming('Perhaps you meant to reference the column "e.salary". Check the spelling.', names) == (
        "Check the spelling.")
    assert drop_naming('Perhaps you meant to reference the column "e"."SALARY".', names) is None
    assert drop_naming("Perhaps you meant salary_band.", names) == "Perhaps you meant salary_band."


async def test_safety_findings_do_not_name_what_they_refused(http: httpx.AsyncClient) -> None:
    for sql in ("SELECT salary FROM employees", "SELECT max(e.email) FROM employees e",
                'SELECT "email" FROM customers'):
        blocked = await http.post("/v1/sql", json={"database": "demo", "sql": sql})
        assert blocked.status_code == 422 and blocked.json()["code"] == "sql_blocked"
        assert "hidden_column" in blocked.json()["codes"]
        assert_no_hidden(blocked.text)
        checked = await http.post("/v1/check", json={"database": "demo", "sql": sql})
        assert checked.status_code == 200 and checked.json()["verdict"]["allowed"] is False
        assert_no_hidden(checked.text)


async def test_ask_traces_and_sse_events_are_masked(http: httpx.AsyncClient, llm: ScriptedLLM) -> None:
    from tests.ask.helpers import script, sql

    for headers in ({}, {"Accept": "text/event-stream"}):
        llm.reset()
        script(llm, sql("SELECT salar FROM employees"), sql("SELECT avg(salary) FROM employees"),
               sql("SELECT count(*) AS n FROM employees"))
        response = await http.post("/v1/ask", headers=headers,
                                   json={"database": "demo", "question": "How many employees are there?"})
        assert response.status_code == 200, response.text
        assert "exec_error" in response.text and "[hidden]" in response.text
        assert_no_hidden(response.text.replace("avg(salary)", ""))  # the LLM's own SQL text is its own
        for request in llm.requests:
            assert_no_hidden(request.text.replace("avg(salary)", "").replace("salar FROM", ""))
