"""Rules through the HTTP API: the schema route and /v1/sql honour hidden objects, edits apply live."""

from __future__ import annotations

from pathlib import Path

import httpx

from gateway.api.app import create_app
from gateway.settings import DatabaseSettings, Settings


async def test_schema_and_sql_routes_honour_rule_edits_live(demo_admin_dsn: str, tmp_path: Path) -> None:
    # As the superuser: the demo reader is not granted hidden columns, and these tests are about the rules.
    demo_dsn = demo_admin_dsn
    rules = tmp_path / "demo.yaml"
    rules.write_text("tables:\n  payments: {hidden: true}\n")
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}, rules_dir=tmp_path))
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        schema = (await http.get("/v1/databases/demo/schema")).json()
        tables = {t["name"]: t for t in schema["tables"]}
        assert "payments" not in tables and "salary" in {c["name"] for c in tables["employees"]["columns"]}

        rules.write_text("tables:\n  payments: {hidden: false}\n  employees:\n    columns:\n"
                         "      salary: {hidden: true}\n      manager_id: {hidden: true}\n")
        schema = (await http.get("/v1/databases/demo/schema")).json()
        employees = next(t for t in schema["tables"] if t["name"] == "employees")
        assert {"salary", "manager_id"}.isdisjoint(c["name"] for c in employees["columns"])
        # the self-reference through the hidden column is gone too
        assert all("manager_id" not in fk["columns"] for fk in employees["foreign_keys"])
        assert "payments" in {t["name"] for t in schema["tables"]}

        blocked = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT avg(salary) FROM employees"})
        assert blocked.status_code == 422 and blocked.json()["code"] == "sql_blocked"
        assert "hidden_column" in blocked.text
        ok = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT count(*) FROM payments"})
        assert ok.status_code == 200


async def test_rules_max_rows_tightens_the_row_cap(demo_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text("limits: {max_rows: 3}\n")
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}, rules_dir=tmp_path))
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        body = {"database": "demo", "sql": "SELECT order_id FROM orders ORDER BY order_id"}
        answer = (await http.post("/v1/sql", json=body)).json()
        assert len(answer["rows"]) == 3 and answer["truncated"] is True
        answer = (await http.post("/v1/sql", json={**body, "max_rows": 2})).json()
        assert len(answer["rows"]) == 2
        answer = (await http.post("/v1/sql", json={**body, "max_rows": 50})).json()
        assert len(answer["rows"]) == 3  # a request cannot loosen the rules


async def test_a_cached_verdict_never_outlives_a_rule_edit(demo_admin_dsn: str, tmp_path: Path) -> None:
    """/v1/sql caches verdicts of repeated SQL per policy; hiding a column must block the same text next time."""
    demo_dsn = demo_admin_dsn  # the demo reader may not read salary at all
    rules = tmp_path / "demo.yaml"
    rules.write_text("instructions: [\"be careful\"]\n")
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)}, rules_dir=tmp_path))
    body = {"database": "demo", "sql": "SELECT max(salary) FROM employees"}
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        for _ in range(2):  # the second answer comes from the cache
            assert (await http.post("/v1/sql", json=body)).status_code == 200
        rules.write_text("tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
        blocked = await http.post("/v1/sql", json=body)
        assert blocked.status_code == 422 and "hidden_column" in blocked.json()["codes"]
        rules.write_text("tables:\n  employees:\n    columns:\n      salary: {hidden: false}\n")
        assert (await http.post("/v1/sql", json=body)).status_code == 200
