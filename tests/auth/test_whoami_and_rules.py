"""GET /v1/whoami (any key, about itself) and GET /v1/databases/{name}/rules (dba: the rules in force and
`rules check` on them), the two routes the web console needs beyond the rest of the API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from gateway.api.app import create_app
from tests.auth.conftest import Gateway, auth_settings, bearer

RULES = """\
tables:
  customers:
    columns:
      emial: a typo, no such column
instructions:
  - Count customers with count(DISTINCT customer_id).
limits:
  max_joins: 4
"""


@pytest.fixture(scope="module")
async def rules_gw(demo_dsn: str, store_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    folder = tmp_path_factory.mktemp("rules-route")
    settings = auth_settings(demo_dsn, store_dsn, folder)
    (folder / "rules" / "demo.yaml").write_text(RULES)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            yield Gateway(http, app.state.gateway)


@pytest.mark.parametrize("role", ["client", "dba", "admin"])
async def test_whoami_tells_a_key_its_own_role_and_databases(rules_gw: Gateway, role: str) -> None:
    token = await rules_gw.key(role, databases=("demo",), name=f"who-{role}")
    r = await rules_gw.http.get("/v1/whoami", headers=bearer(token))
    assert r.status_code == 200
    assert r.json() == {"name": f"who-{role}", "role": role, "databases": ["demo"], "auth_enabled": True,
                        "user": None, "client": None, "scopes": None, "policy": {}, "store": True}  # no end user behind a key


async def test_whoami_without_a_valid_key_is_401(rules_gw: Gateway) -> None:
    assert (await rules_gw.http.get("/v1/whoami")).status_code == 401
    r = await rules_gw.http.get("/v1/whoami", headers=bearer("nl2sql_abcdefgh_" + "x" * 32))
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"


async def test_rules_show_what_is_in_force_and_what_rules_check_finds(rules_gw: Gateway) -> None:
    token = await rules_gw.key("dba", databases=("demo",))
    r = await rules_gw.http.get("/v1/databases/demo/rules", headers=bearer(token))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["files"] == ["demo.yaml"]  # relative to rules_dir: no server path leaks
    assert body["instructions"] == ["Count customers with count(DISTINCT customer_id)."]
    assert body["limits"] == {"max_joins": 4}
    [problem] = [p for p in body["problems"] if "emial" in p["message"]]
    assert problem["file"] == "demo.yaml" and problem["line"] > 0 and problem["severity"] == "error"
    assert all(p["file"] == "demo.yaml" for p in body["problems"])  # only this database's files


async def test_rules_need_a_dba_key_that_may_use_the_database(rules_gw: Gateway) -> None:
    client = await rules_gw.key("client")
    r = await rules_gw.http.get("/v1/databases/demo/rules", headers=bearer(client))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"  # the answer names what the rules hide
    other = await rules_gw.key("dba", databases=("elsewhere",))
    r = await rules_gw.http.get("/v1/databases/demo/rules", headers=bearer(other))
    assert r.status_code == 403 and "may not use database" in r.json()["detail"]
    dba = await rules_gw.key("dba")
    r = await rules_gw.http.get("/v1/databases/nope/rules", headers=bearer(dba))
    assert r.status_code == 404 and r.json()["code"] == "unknown_database"
    assert (await rules_gw.http.get("/v1/databases/demo/rules")).status_code == 401
