"""Three ``nl2sql-gateway serve`` processes sharing one store behind HAProxy (round robin, no stickiness).

The 1 s bounds are the requirement itself (a change reaches every replica within a second), measured by
the test's own clock from the moment the change committed; the waits are on conditions, polled, never
fixed sleeps.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest

from gateway.auth.keys import Role, new_token
from gateway.pipeline import prompts
from gateway.settings import StoreSettings
from gateway.store import Store, api_keys, guidelines
from gateway.testing import haproxy
from gateway.testing.scripted_llm import ScriptedLLM
from tests.conftest import PgServer, scratch_database
from tests.replicas.cluster import Cluster, cluster

RATE, BURST = 20.0, 5  # the client role's limit, for all three replicas together
COUNT_SQL = "SELECT count(*) FROM orders"

pytestmark = pytest.mark.skipif(haproxy.binary() is None, reason="haproxy is not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
async def store_dsn(pg: PgServer) -> AsyncIterator[str]:
    async with scratch_database(pg, "nl2sql_cluster") as dsn:
        yield dsn


@pytest.fixture(scope="module")
async def tokens(store_dsn: str) -> dict[str, str]:
    store = await Store.open(StoreSettings(dsn=store_dsn))
    made = {}
    try:
        for name, role in (("admin", Role.ADMIN), ("client", Role.CLIENT), ("revoked", Role.CLIENT)):
            token = new_token()
            await api_keys.create(store.pool, key_id=token.key_id, name=name, role=role.value, databases=["*"],
                                  pg_role=None, secret_sha256=token.secret_sha256)
            made[name] = token.token
            made[name + "_id"] = token.key_id
    finally:
        await store.close()
    return made


@pytest.fixture(scope="module")
def three(demo_dsn: str, store_dsn: str, tokens: dict[str, str], llm_server: ScriptedLLM) -> Iterator[Cluster]:
    llm_server.reset()
    llm_server.add(lambda r: f"<sql>{COUNT_SQL}</sql>" if r.system == prompts.GENERATE_SYSTEM else None)
    env = {
        "NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_STORE__DSN": store_dsn,
        "NL2SQL_AUTH__ENABLED": "true", "NL2SQL_MAGIC__SCHEDULE": "false",
        "NL2SQL_BACKPRESSURE__SHARED": "true",
        "NL2SQL_BACKPRESSURE__ROLES": json.dumps({"client": {"rate_per_s": RATE, "burst": BURST}}),
        "NL2SQL_LLM__BASE_URL": llm_server.base_url, "NL2SQL_LLM__MODEL": "scripted",
        "NL2SQL_LLM__API_KEY": "test", "NL2SQL_LOGGING__LEVEL": "WARNING",
    }
    with cluster(env) as running:
        running.tokens = tokens
        yield running
    llm_server.reset()


def auth(cluster: Cluster, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {cluster.tokens[who]}"}


async def ask(http: httpx.AsyncClient, url: str, headers: dict[str, str], **extra: object) -> httpx.Response:
    return await http.post(url + "/v1/ask", headers=headers,
                           json={"database": "demo", "question": "How many orders are there?", **extra})


async def notified(store_dsn: str, kind: str) -> tuple[asyncpg.Connection, asyncio.Queue[int]]:
    """A connection listening on the change channel; the queue gets the versions of ``kind`` announced."""
    conn = await asyncpg.connect(store_dsn)
    queue: asyncio.Queue[int] = asyncio.Queue()

    def heard(_c: object, _p: int, _ch: str, payload: str) -> None:
        got, version, _ = payload.split(":", 2)
        if got == kind:
            queue.put_nowait(int(version))

    await conn.add_listener("nl2sql_changes", heard)
    return conn, queue


async def serves(http: httpx.AsyncClient, url: str, kind: str, version: int, since: float) -> float:
    """Seconds from ``since`` until the replica at ``url`` reports serving ``version`` of ``kind``."""
    while True:
        changes = (await http.get(url + "/readyz")).json().get("changes", {})
        if changes.get("versions", {}).get(kind, -1) >= version:
            return time.monotonic() - since
        if time.monotonic() - since > 5:
            pytest.fail(f"{url} still serves {changes} ({kind} {version} was announced 5 s ago)")
        await asyncio.sleep(0.01)


async def test_a_conversation_continues_on_the_other_replicas(three: Cluster) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        first = await ask(http, three.replicas[0].base_url, auth(three, "admin"))
        assert first.status_code == 200, first.text
        conversation = first.json()["conversation_id"]
        for replica in three.replicas[1:]:
            follow = await ask(http, replica.base_url, auth(three, "admin"), conversation_id=conversation)
            assert follow.status_code == 200, follow.text
            assert follow.json()["conversation_id"] == conversation


async def test_a_guideline_activated_on_one_is_in_force_on_all_within_a_second(three: Cluster,
                                                                                store_dsn: str) -> None:
    store = await Store.open(StoreSettings(dsn=store_dsn), apply_migrations=False)
    listener, versions = await notified(store_dsn, "guidelines")
    try:
        async with store.pool.acquire() as conn:
            candidate = await guidelines.add_candidate(conn, text="1. CLUSTER-WIDE-7Q", parent=None, provenance={},
                                                       database="demo")
        while not versions.empty():
            versions.get_nowait()  # the candidate's own announcement
        async with httpx.AsyncClient(timeout=60) as http:
            for replica in three.replicas:  # each replica caches the guideline in force now
                assert (await ask(http, replica.base_url, auth(three, "admin"))).status_code == 200
            activated = await http.post(f"{three.replicas[0].base_url}/v1/guidelines/{candidate}/activate",
                                        headers=auth(three, "admin"), json={"force": True})
            assert activated.status_code == 200, activated.text
            version = await asyncio.wait_for(versions.get(), 5)
            since = time.monotonic()  # the activation committed: its NOTIFY has been delivered
            delays = [await serves(http, r.base_url, "guidelines", version, since) for r in three.replicas]
            assert max(delays) < 1.0, delays
            for replica in three.replicas:
                answer = (await ask(http, replica.base_url, auth(three, "admin"))).json()
                assert answer["guideline_version"] == f"v{candidate}", answer
    finally:
        await listener.close()
        await store.close()


async def test_a_revoked_key_is_refused_by_every_replica_within_a_second(three: Cluster, store_dsn: str) -> None:
    store = await Store.open(StoreSettings(dsn=store_dsn), apply_migrations=False)
    listener, versions = await notified(store_dsn, "keys")
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            for replica in three.replicas:  # the key is in every replica's cache (auth.cache_ttl_s: 5 s)
                assert (await http.get(replica.base_url + "/v1/databases", headers=auth(three, "revoked"))
                        ).status_code == 200
            # What `nl2sql-gateway keys revoke` does, against the shared store.
            assert await api_keys.revoke(store.pool, three.tokens["revoked_id"]) is not None
            version = await asyncio.wait_for(versions.get(), 5)
            since = time.monotonic()
            delays = []
            for replica in three.replicas:
                while (await http.get(replica.base_url + "/v1/databases", headers=auth(three, "revoked"))
                       ).status_code != 401:
                    assert time.monotonic() - since < 5, "still accepted 5 s after the revocation"
                    await asyncio.sleep(0.01)
                delays.append(time.monotonic() - since)
            assert max(delays) < 1.0, delays
            assert all([await serves(http, r.base_url, "keys", version, since) for r in three.replicas])
    finally:
        await listener.close()
        await store.close()


async def test_a_global_limit_admits_its_rate_across_the_three(three: Cluster) -> None:
    statuses: list[int] = []
    seconds = 3.0

    async def hammer(http: httpx.AsyncClient, stop: float) -> None:
        while time.monotonic() < stop:
            response = await http.post(three.base_url + "/v1/sql", headers=auth(three, "client"),
                                       json={"database": "demo", "sql": "SELECT 1"})
            statuses.append(response.status_code)

    async with httpx.AsyncClient(timeout=30) as http:
        started = time.monotonic()
        await asyncio.gather(*(hammer(http, started + seconds) for _ in range(6)))
        elapsed = time.monotonic() - started
    admitted, refused = statuses.count(200), statuses.count(429)
    assert admitted + refused == len(statuses), set(statuses)
    assert refused > admitted  # the clients asked for more than the limit
    ratio = admitted / (RATE * elapsed + BURST)
    assert 0.9 <= ratio <= 1.1, (admitted, refused, elapsed, ratio)


async def test_killing_a_replica_loses_no_acknowledged_write(three: Cluster, store_dsn: str) -> None:
    acknowledged: list[str] = []

    async def asker(http: httpx.AsyncClient, n: int) -> None:
        for _ in range(n):
            try:
                response = await ask(http, three.base_url, auth(three, "admin"))
            except httpx.TransportError:
                continue  # in flight on the killed replica: never acknowledged, so nothing was promised
            if response.status_code == 200:
                acknowledged.append(response.json()["request_id"])

    async with httpx.AsyncClient(timeout=60) as http:
        work = asyncio.gather(*(asker(http, 8) for _ in range(3)))
        while len(acknowledged) < 4:
            await asyncio.sleep(0.01)
        three.replicas[2].process.send_signal(signal.SIGKILL)
        await work
    assert len(acknowledged) >= 12  # the other two went on answering
    conn = await asyncpg.connect(store_dsn)
    try:
        stored = {r["request_id"] for r in await conn.fetch(
            "SELECT request_id FROM request_audit WHERE request_id = ANY($1::text[])", acknowledged)}
    finally:
        await conn.close()
    assert stored == set(acknowledged)


