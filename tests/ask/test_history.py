"""Answer history and permalinks (gateway.history): who may see an audited answer is decided in the Gateway,
for every adapter; an answer someone may not see is exactly as absent as one never given."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from gateway import Gateway, errors
from gateway.auth import Principal, Role
from gateway.feedback import audit_answer
from gateway.settings import StoreSettings
from gateway.store import examples
from tests.ask.helpers import ask_settings

QUESTION = "How many regions are there?"


def key(name: str, role: Role = Role.CLIENT, databases: frozenset[str] = frozenset({"demo"}),
        claims: tuple[tuple[str, str], ...] = ()) -> Principal:
    return Principal(name=name, role=role, databases=databases, key_id=f"{name:0<12}"[:12], claims=claims)


async def test_only_the_owner_and_dbas_of_the_database_see_an_answer(demo_dsn: str, fresh_db: str,
                                                                     dirs: dict[str, Path]) -> None:
    settings = ask_settings(demo_dsn, dirs, base_url=None)  # verified questions answer without an LLM
    settings.store = StoreSettings(dsn=fresh_db, exact_match_answers=True)
    ann, bob = key("ann"), key("bob")
    async with Gateway(settings) as gw:
        pool = await asyncpg.create_pool(fresh_db, min_size=1, max_size=1)
        try:
            await examples.add(pool, database="demo", question=QUESTION, sql="SELECT count(*) AS n FROM regions",
                               source="dba")
        finally:
            await pool.close()
        q = gw.question("demo", QUESTION, principal=ann)
        answer = await gw.ask(q)
        await audit_answer(gw.state.store, answer, q)  # as the HTTP and MCP adapters do
        request_id = answer.request_id
        mine = await gw.history(principal=ann)
        assert [a["request_id"] for a in mine] == [request_id] and mine[0]["sql"].startswith("SELECT count(*)")
        assert "rows" not in mine[0]
        seen = await gw.audited_answer(request_id, principal=ann)
        assert seen["yours"] is True and seen["question"] == QUESTION
        assert await gw.history(principal=bob) == []
        for who in (bob,  # another analyst of the same database
                    key("dora", Role.DBA, frozenset({"warehouse"})),  # a dba of another database
                    key("tess", Role.DBA, claims=(("tenant_id", "1"),)),  # a dba under a row policy
                    key("ann", databases=frozenset({"warehouse"}))):  # the owner's key, no longer for demo
            with pytest.raises(errors.UnknownRequest):
                await gw.audited_answer(request_id, principal=who)
        with pytest.raises(errors.UnknownRequest):
            await gw.audited_answer("no-such-request", principal=ann)
        reviewer = await gw.audited_answer(request_id, principal=key("rita", Role.DBA))
        assert reviewer["yours"] is False and reviewer["request_id"] == request_id
