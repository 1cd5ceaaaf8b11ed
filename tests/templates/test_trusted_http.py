"""Trusted answers over HTTP (issue 29, part 2): a DBA's template answers the questions that match it, without
the LLM, labelled ``trusted``; values outside a column's domain are a 422 with suggestions; a client re-runs
a template with other values; only a dba creates or deletes."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from gateway.testing.scripted_llm import ScriptedLLM
from tests.templates.helpers import (
    GENERATED,
    SEGMENT_TEMPLATE,
    STATUS_TEMPLATE,
    ask,
    create,
    gateway,
    is_generation,
    make_key,
    script_llm,
    settings,
    sse_events,
)


async def count(demo_dsn: str, sql: str, *args: object) -> int:
    conn = await asyncpg.connect(demo_dsn)
    try:
        return int(await conn.fetchval(sql, *args))
    finally:
        await conn.close()


async def test_a_matching_question_is_answered_by_the_template_labelled_trusted(
        demo_dsn: str, fresh_db: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    script_llm(llm)
    async with gateway(settings(demo_dsn, fresh_db, llm, tmp_path)) as (http, state):
        dba, client = await make_key(state, "dba"), await make_key(state, "client")
        made = await create(http, dba, STATUS_TEMPLATE)
        assert made["questions"] == ["How many orders are {status}", "Count the {status} orders"]
        assert made["parameters"][0]["type"] == "text" and "cancelled" in made["parameters"][0]["values"]

        body = await ask(http, client, "how many orders are  CANCELLED?")
        assert body["status"] == "ok", body
        assert body["trusted"] == {"template": "orders_by_status", "parameters": {"status": "cancelled"},
                                   "run": "/v1/templates/orders_by_status/run"}
        assert body["rows"] == [[await count(demo_dsn, "SELECT count(*) FROM orders WHERE status = 'cancelled'")]]
        assert [a["source"] for a in body["attempts"]] == ["template"]
        assert body["sql"] == STATUS_TEMPLATE["sql"]  # the values are parameters, never in the text
        assert not [r for r in llm.requests if is_generation(r)]

        # A value the column does not hold, other words, another spelling of the question: not this template.
        for question in ("How many orders are lost?", "How many orders are cancelled last year?",
                         "How many orders are cancelled or shipped?"):
            other = await ask(http, client, question)
            assert "trusted" not in other and other["sql"] == GENERATED, question
        # Two slots, both checked: the defaults spelled in the example question became its slots.
        made = await create(http, dba, SEGMENT_TEMPLATE)
        assert made["questions"] == ["How many {segment} customers are in {region}"]
        body = await ask(http, client, "How many small business customers are in 'Western Europe'?")
        assert body["trusted"]["parameters"] == {"region": "Western Europe", "segment": "Small Business"}
        assert body["rows"] == [[await count(
            demo_dsn, "SELECT count(*) FROM customers c JOIN regions r USING (region_id) "
            "WHERE r.name = 'Western Europe' AND c.segment = 'Small Business'")]]

        listed = (await http.get("/v1/templates", headers=client)).json()["templates"]
        assert [t["name"] for t in listed] == ["customers_by_region_segment", "orders_by_status"]
        assert {t["name"]: t["uses"] for t in listed} == {"customers_by_region_segment": 1, "orders_by_status": 1}
        assert listed[1]["starter"] == "How many orders are shipped"


async def test_run_with_other_values_and_422_with_suggestions(demo_dsn: str, fresh_db: str, llm: ScriptedLLM,
                                                              tmp_path: Path) -> None:
    async with gateway(settings(demo_dsn, fresh_db, llm, tmp_path)) as (http, state):
        dba, client = await make_key(state, "dba"), await make_key(state, "client")
        await create(http, dba, STATUS_TEMPLATE)
        run = await http.post("/v1/templates/orders_by_status/run", headers=client,
                              json={"parameters": {"status": "Returned"}})
        assert run.status_code == 200, run.text
        body = run.json()
        assert body["trusted"]["parameters"] == {"status": "returned"} and body["status"] == "ok"
        assert body["rows"] == [[await count(demo_dsn, "SELECT count(*) FROM orders WHERE status = 'returned'")]]
        # The answer is audited: its owner can give feedback on it.
        fed = await http.post("/v1/feedback", headers=client, json={"request_id": body["request_id"],
                                                                    "verdict": "correct"})
        assert fed.status_code == 201, fed.text
        # Its SQL has bind parameters: the verdict counts, but it is no example (the template already is one).
        assert fed.json()["example_id"] is None
        assert (await http.get("/v1/examples", headers=dba)).json() == {"examples": []}
        default = (await http.post("/v1/templates/orders_by_status/run", headers=client)).json()
        assert default["trusted"]["parameters"] == {"status": "shipped"}

        bad = await http.post("/v1/templates/orders_by_status/run", headers=client,
                              json={"parameters": {"status": "shiped"}})
        assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
        problem = bad.json()
        assert problem["code"] == "template_value_invalid" and problem["parameter"] == "status"
        assert problem["suggestions"][0] == "shipped" and "shipped" in problem["detail"]
        # An injection attempt is only a value that is not in the domain.
        evil = await http.post("/v1/templates/orders_by_status/run", headers=client,
                               json={"parameters": {"status": "x' OR '1'='1"}})
        assert evil.status_code == 422 and evil.json()["code"] == "template_value_invalid"
        unknown = await http.post("/v1/templates/orders_by_status/run", headers=client,
                                  json={"parameters": {"colour": "red"}})
        assert unknown.status_code == 422 and unknown.json()["code"] == "invalid_request"
        missing = await http.post("/v1/templates/no_such/run", headers=client)
        assert missing.status_code == 404 and missing.json()["code"] == "unknown_template"


async def test_integer_parameters_are_checked_against_the_column_type(demo_dsn: str, fresh_db: str,
                                                                      tmp_path: Path) -> None:
    async with gateway(settings(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        dba = await make_key(state, "dba")
        await create(http, dba, {
            "database": "demo", "name": "items_of_order", "sql": "SELECT count(*) AS lines FROM order_items "
            "WHERE order_id = $1", "parameters": [{"name": "order", "column": "order_items.order_id", "default": 1}],
            "questions": ["How many lines does order {order} have?"]})
        ok = await http.post("/v1/templates/items_of_order/run", headers=dba, json={"parameters": {"order": 2}})
        assert ok.status_code == 200 and ok.json()["rows"] == [[await count(
            demo_dsn, "SELECT count(*) FROM order_items WHERE order_id = 2")]]
        for value in ("two", "1.5", "99999999999", "1; DROP TABLE orders"):
            bad = await http.post("/v1/templates/items_of_order/run", headers=dba,
                                  json={"parameters": {"order": value}})
            assert bad.status_code == 422 and bad.json()["code"] == "template_value_invalid", value
        # Without an LLM at all, a matching question is still answered.
        answered = await ask(http, dba, "how many lines does order 3 have")
        assert answered["trusted"]["parameters"] == {"order": "3"}


async def test_only_a_dba_creates_deletes_or_reads_suggestions(demo_dsn: str, fresh_db: str, llm: ScriptedLLM,
                                                                tmp_path: Path) -> None:
    async with gateway(settings(demo_dsn, fresh_db, llm, tmp_path)) as (http, state):
        dba, client = await make_key(state, "dba"), await make_key(state, "client")
        other_dba = await make_key(state, "dba", databases=("elsewhere",))
        refused = await http.post("/v1/templates", headers=client, json=STATUS_TEMPLATE)
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
        assert (await http.post("/v1/templates", headers=other_dba, json=STATUS_TEMPLATE)).status_code == 403
        await create(http, dba, STATUS_TEMPLATE)
        again = await http.post("/v1/templates", headers=dba, json=STATUS_TEMPLATE)
        assert again.status_code == 409 and again.json()["code"] == "template_exists"
        for response in (await http.delete("/v1/templates/orders_by_status", headers=client),
                         await http.get("/v1/templates/suggestions", headers=client)):
            assert response.status_code == 403 and response.json()["code"] == "forbidden"
        # Another database's dba sees no such template.
        assert (await http.delete("/v1/templates/orders_by_status", headers=other_dba)).status_code == 404
        assert (await http.get("/v1/templates", headers=other_dba)).json() == {"templates": []}
        for response in (await http.post("/v1/templates/orders_by_status/run", headers=other_dba),
                         await http.get("/v1/templates/orders_by_status", headers=other_dba)):
            assert response.status_code == 404 and response.json()["code"] == "unknown_template"
        assert (await http.get("/v1/templates?database=demo", headers=other_dba)).json()["code"] == "forbidden"
        assert (await http.get("/v1/templates/orders_by_status", headers=client)).status_code == 200
        assert (await http.delete("/v1/templates/orders_by_status", headers=dba)).status_code == 204
        assert (await http.get("/v1/templates/orders_by_status", headers=client)).status_code == 404


async def test_definitions_are_checked_before_they_are_stored(demo_dsn: str, fresh_db: str, tmp_path: Path) -> None:
    async with gateway(settings(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        dba = await make_key(state, "dba")
        cases = {
            "sql": {**STATUS_TEMPLATE, "sql": "DELETE FROM orders WHERE status = $1"},
            "numbers": {**STATUS_TEMPLATE, "sql": "SELECT count(*) FROM orders WHERE status = $2"},
            "column": {**STATUS_TEMPLATE, "parameters": [{"name": "status", "column": "orders.nope",
                                                          "default": "shipped"}]},
            "slot": {**STATUS_TEMPLATE, "questions": ["How many orders are there?"]},
            "default": {**STATUS_TEMPLATE, "parameters": [{"name": "status", "column": "orders.status",
                                                           "default": "lost"}]},
            "runs": {**STATUS_TEMPLATE, "sql": "SELECT count(*) FROM orders WHERE status = $1 AND 1/0 = 1"},
        }
        for what, body in cases.items():
            response = await http.post("/v1/templates", headers=dba, json=body)
            expected = "template_value_invalid" if what == "default" else "template_invalid"
            assert response.status_code == 422 and response.json()["code"] == expected, (what, response.text)
        assert (await http.get("/v1/templates", headers=dba)).json() == {"templates": []}


async def test_the_streaming_ask_is_trusted_too(demo_dsn: str, fresh_db: str, llm: ScriptedLLM,
                                                tmp_path: Path) -> None:
    script_llm(llm)
    async with gateway(settings(demo_dsn, fresh_db, llm, tmp_path)) as (http, state):
        dba = await make_key(state, "dba")
        await create(http, dba, STATUS_TEMPLATE)
        response = await http.post("/v1/ask", headers={**dba, "Accept": "text/event-stream"},
                                   json={"database": "demo", "question": "Count the pending orders"})
        assert response.status_code == 200
        events = sse_events(response.text)
        assert [name for name, _ in events] == ["attempt", "answer"]
        assert events[0][1]["source"] == "template"
        assert events[1][1]["trusted"]["parameters"] == {"status": "pending"}
        assert not [r for r in llm.requests if is_generation(r)]


async def test_a_doubt_about_how_the_result_looks_does_not_make_a_trusted_answer_suspicious(
        demo_dsn: str, fresh_db: str, tmp_path: Path) -> None:
    """A DBA vouched for the SQL: an empty result is recorded as a finding, the answer stays ok (as an upheld
    one); a template that fails at run time is a failed answer, never a trusted ok."""
    async with gateway(settings(demo_dsn, fresh_db, None, tmp_path)) as (http, state):
        dba = await make_key(state, "dba")
        await create(http, dba, {
            "database": "demo", "name": "big_lines", "sql": "SELECT order_id, quantity FROM order_items "
            "WHERE quantity > $1 ORDER BY order_id LIMIT 5",
            "parameters": [{"name": "n", "column": "order_items.quantity", "default": 1}],
            "questions": ["Which order lines have more than {n} items?"]})
        empty = (await http.post("/v1/templates/big_lines/run", headers=dba,
                                 json={"parameters": {"n": 1000000}})).json()
        assert empty["status"] == "ok" and empty["rows"] == [] and empty["trusted"]["parameters"] == {"n": "1000000"}
        assert "empty_result" in [f["code"] for f in empty["findings"]]
        assert empty["attempts"][0].get("upheld") is True
        await create(http, dba, {
            "database": "demo", "name": "per_share", "sql": "SELECT count(*) AS n FROM order_items "
            "WHERE quantity > 100 / $1", "parameters": [{"name": "share", "column": "order_items.quantity",
                                                          "default": 10}],
            "questions": ["How many lines are over a {share}th of a hundred items?"]})
        failed = (await http.post("/v1/templates/per_share/run", headers=dba, json={"parameters": {"share": 0}})).json()
        assert failed["status"] == "failed" and failed["rows"] == []
        assert [f["code"] for f in failed["findings"]] == ["exec_error"]
