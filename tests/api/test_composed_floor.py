"""The throughput benchmark's composed floor (bench/floor_app.py:composed_app) has none of the gateway's checks,
so it must run only the benchmark's own query: the SQL a request carries is never executed."""

from __future__ import annotations

import httpx
import pytest

from bench.floor_app import composed_app
from bench.throughput import ROWS


async def test_the_composed_floor_runs_its_own_query_never_the_bodys(demo_dsn: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NL2SQL_DATABASES__DEMO__DSN", demo_dsn)
    app = composed_app()
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            for sql in ("SELECT salary FROM employees", "SELECT pg_sleep(30)", "not sql at all"):
                response = await http.post("/bench/composed", json={"database": "demo", "sql": sql})
                assert response.status_code == 200, response.text
                answer = response.json()
                assert answer["row_count"] == ROWS and "salary" not in response.text
