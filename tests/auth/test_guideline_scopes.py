"""Guideline scopes under access control: a DBA of one database manages that database's versions only, and
cannot change the global guideline, which every other database uses."""

from __future__ import annotations

import pytest

from gateway import errors
from gateway.store import guidelines
from tests.auth.conftest import Gateway, bearer
from tests.auth.test_http import assert_problem


async def test_a_dba_of_one_database_manages_its_versions_and_not_the_global_ones(gw: Gateway) -> None:
    store = gw.state.store
    assert store is not None
    demo_dba, rls_dba, all_dba = (await gw.key("dba", databases=("demo",)), await gw.key("dba", databases=("rls",)),
                                  await gw.key("dba"))
    async with store.transaction() as conn:
        g = await guidelines.add_candidate(conn, text="1. global reminders", parent=None, provenance={})
        d = await guidelines.add_candidate(conn, text="1. demo reminders", parent=None, provenance={},
                                           database="demo")
    await guidelines.activate(store.pool, g, actor="test")
    try:
        as_demo = bearer(demo_dba)
        # the global scope is refused, whichever way it is changed
        for path, body in (("/v1/guidelines/reset", {}), ("/v1/guidelines/rollback", {}),
                           ("/v1/guidelines/regenerate", {}), (f"/v1/guidelines/{g}/activate", {"force": True})):
            assert_problem(await gw.http.post(path, json=body, headers=as_demo), 403, "forbidden")
        # its own database is allowed
        activated = await gw.http.post(f"/v1/guidelines/{d}/activate", json={"force": True}, headers=as_demo)
        assert activated.status_code == 200 and activated.json()["database"] == "demo"
        reset = await gw.http.post("/v1/guidelines/reset", json={"database": "demo"}, headers=as_demo)
        assert reset.status_code == 200 and reset.json()["retired"] == d
        # another database's DBA neither sees nor touches demo's versions
        as_rls = bearer(rls_dba)
        listed = (await gw.http.get("/v1/guidelines", headers=as_rls)).json()
        assert d not in [v["version"] for v in listed["versions"]] and g in [v["version"] for v in listed["versions"]]
        assert_problem(await gw.http.get(f"/v1/guidelines/{d}", headers=as_rls), 403, "forbidden")
        assert_problem(await gw.http.post("/v1/guidelines/rollback", json={"database": "demo"}, headers=as_rls),
                       403, "forbidden")
        assert_problem(await gw.http.get("/v1/guidelines", params={"database": "demo"}, headers=as_rls),
                       403, "forbidden")
        events = (await gw.http.get("/v1/guidelines/events", headers=as_rls)).json()["events"]
        assert all(e["database"] != "demo" for e in events)
        # a key for every database may change the global scope
        assert (await gw.http.post("/v1/guidelines/reset", json={}, headers=bearer(all_dba))).status_code == 200
        assert await guidelines.active(store.pool) is None
    finally:
        await guidelines.reset(store.pool, None)
        await guidelines.reset(store.pool, "demo")


async def test_http_and_the_python_api_refuse_the_same_scope_changes(gw: Gateway) -> None:
    """Who may change a guideline scope is decided once, in Gateway: the HTTP API and the Python API (and so
    MCP and the CLI, which call the same methods) refuse the same changes with the same problem."""
    store, service = gw.state.store, gw.service
    assert store is not None and service is not None
    token = await gw.key("dba", databases=("demo",))
    principal = await service.authenticate(f"Bearer {token}")  # the principal the HTTP API acts for
    assert service.may_change_guidelines(principal, "demo")
    assert not service.may_change_guidelines(principal, None) and not service.may_change_guidelines(principal, "rls")
    async with store.transaction() as conn:
        g = await guidelines.add_candidate(conn, text="1. global parity", parent=None, provenance={})
        r = await guidelines.add_candidate(conn, text="1. rls parity", parent=None, provenance={}, database="rls")
    before = await guidelines.events(store.pool, limit=1000)
    refused = [
        ("/v1/guidelines/reset", {}, service.reset_guideline(None, principal=principal)),
        ("/v1/guidelines/reset", {"database": "rls"}, service.reset_guideline("rls", principal=principal)),
        ("/v1/guidelines/rollback", {}, service.rollback(database=None, principal=principal)),
        ("/v1/guidelines/rollback", {"database": "rls"}, service.rollback(database="rls", principal=principal)),
        ("/v1/guidelines/rollback", {"version": g}, service.rollback(g, principal=principal)),
        ("/v1/guidelines/regenerate", {}, service.regenerate(principal=principal)),
        ("/v1/guidelines/regenerate", {"database": "rls"}, service.regenerate(database="rls", principal=principal)),
        (f"/v1/guidelines/{g}/activate", {"force": True}, service.activate(g, force=True, principal=principal)),
        (f"/v1/guidelines/{r}/activate", {"force": True}, service.activate(r, force=True, principal=principal)),
    ]
    for path, body, call in refused:
        answer = await gw.http.post(path, json=body, headers=bearer(token))
        assert_problem(answer, 403, "forbidden")
        try:
            await call
        except errors.Forbidden as exc:
            assert exc.detail == answer.json()["detail"], path
        else:
            raise AssertionError(f"the Python API allowed what {path} {body} refused")
    assert await guidelines.events(store.pool, limit=1000) == before  # nothing changed, either way
    assert await guidelines.active(store.pool) is None and await guidelines.active(store.pool, "rls") is None


async def test_a_client_key_changes_no_guideline_through_the_python_api(gw: Gateway) -> None:
    """The role is checked behind Gateway too, not only by the HTTP route table: a client key of the
    database may not reset, roll back or regenerate its guideline through any entry point."""
    service = gw.service
    assert service is not None
    token = await gw.key("client", databases=("demo",))
    principal = await service.authenticate(f"Bearer {token}")
    assert not service.may_change_guidelines(principal, "demo")
    for call in (lambda: service.reset_guideline("demo", principal=principal),
                 lambda: service.rollback(database="demo", principal=principal),
                 lambda: service.regenerate(database="demo", principal=principal)):
        with pytest.raises(errors.Forbidden):
            await call()
