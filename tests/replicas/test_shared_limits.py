"""Rate limits kept in the store hold across processes (``backpressure.shared``, gateway.shared_limits).

Each ``SharedRateLimits`` here stands for one worker or replica: they share nothing but the store.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from structlog.testing import capture_logs

from gateway import errors
from gateway.auth.keys import Principal, Role
from gateway.observability import metrics
from gateway.settings import BackpressureSettings, RateLimit
from gateway.shared_limits import SharedRateLimits
from gateway.store import Store

KEY = Principal(name="bi", role=Role.CLIENT, databases=frozenset({"demo"}), key_id="0123456789ab")
ALICE = Principal(name="alice", role=Role.CLIENT, databases=frozenset({"demo"}), key_id="feedfeedfeed", user="alice")


def settings(**extra: object) -> BackpressureSettings:
    return BackpressureSettings(shared=True, **extra)  # type: ignore[arg-type]


async def admitted(limits: SharedRateLimits, principal: Principal, attempts: int) -> int:
    count = 0
    for _ in range(attempts):
        try:
            await limits.admit(principal, "10.0.0.1")
            count += 1
        except errors.TooManyRequests:
            pass
    return count


async def test_three_processes_share_one_bucket_per_key(store: Store) -> None:
    # A rate so low nothing refills during the test: what is admitted is the burst, once, not once a process.
    config = settings(rate_per_s=0.001, burst=7)
    processes = [SharedRateLimits(config, lambda: store) for _ in range(3)]
    counts = await asyncio.gather(*(admitted(p, KEY, 10) for p in processes))
    assert sum(counts) == 7
    # Every process refuses now, with the usual 429 and a Retry-After from the shared bucket.
    for p in processes:
        with pytest.raises(errors.TooManyRequests) as refused:
            await p.admit(KEY, "10.0.0.1")
        assert refused.value.retry_after >= 1  # type: ignore[attr-defined]
    # Another key has a bucket of its own.
    other = Principal(name="other", role=Role.CLIENT, databases=frozenset({"demo"}), key_id="aaaaaaaaaaaa")
    assert await admitted(processes[0], other, 3) == 3


async def test_an_end_user_is_limited_across_processes_beside_the_key(store: Store) -> None:
    config = settings(rate_per_s=0.001, burst=50, user_rate_per_s=0.001, user_burst=2)
    a, b = SharedRateLimits(config, lambda: store), SharedRateLimits(config, lambda: store)
    assert await admitted(a, ALICE, 1) + await admitted(b, ALICE, 5) == 2
    tokens = await store.pool.fetchval("SELECT tokens FROM rate_buckets WHERE key = 'key:feedfeedfeed'")
    # The key's bucket is spent first, as in memory: all six attempts paid it, the user's bucket refused four.
    assert tokens == pytest.approx(44, abs=0.01)


async def test_roles_keep_their_own_limits_in_the_store(store: Store) -> None:
    config = settings(rate_per_s=0.001, burst=1, roles={"dba": RateLimit(rate_per_s=0.001, burst=4)})
    dba = Principal(name="dba", role=Role.DBA, databases=frozenset({"demo"}), key_id="dbadbadbadba")
    assert await admitted(SharedRateLimits(config, lambda: store), dba, 10) == 4
    assert await admitted(SharedRateLimits(config, lambda: store), KEY, 10) == 1


async def test_a_lease_serves_several_requests_with_one_store_statement(store: Store) -> None:
    config = settings(rate_per_s=1000, burst=100, shared_lease_s=0.05)  # leases of 50 tokens
    limits = SharedRateLimits(config, lambda: store)
    assert limits.lease_size(KEY.role.value, False) == 50
    granted = metrics.SHARED_LIMIT_LEASES.labels("granted")
    before = granted._value.get()
    assert await admitted(limits, KEY, 50) == 50
    assert granted._value.get() - before == 1
    assert await admitted(limits, KEY, 1) == 1
    assert granted._value.get() - before == 2


async def unreachable_store() -> Store:
    # Nothing listens on port 1: every connection attempt is refused at once.
    pool = await asyncpg.create_pool("postgresql://nobody@127.0.0.1:1/none", min_size=0, max_size=1)
    return Store(pool)


async def test_store_down_falls_back_to_local_buckets_with_a_log_line_and_metric(store: Store) -> None:
    down = await unreachable_store()
    current = {"store": down}
    limits = SharedRateLimits(settings(rate_per_s=0.001, burst=2, shared_retry_s=0.05), lambda: current["store"])
    try:
        with capture_logs() as logs:
            assert await admitted(limits, KEY, 5) == 2  # the local bucket of this process
        assert [e["event"] for e in logs if "shared_limits" in e["event"]] == ["shared_limits_degraded"]
        assert limits.degraded and metrics.SHARED_LIMITS_DEGRADED._value.get() == 1
        current["store"] = store
        await asyncio.sleep(0.06)  # past shared_retry_s: the next request tries the store again
        with capture_logs() as logs:
            assert await admitted(limits, KEY, 5) == 2  # the shared bucket, full, of burst 2
        assert [e["event"] for e in logs if "shared_limits" in e["event"]] == ["shared_limits_restored"]
        assert not limits.degraded and metrics.SHARED_LIMITS_DEGRADED._value.get() == 0
    finally:
        await down.pool.close()


async def test_store_down_fails_closed_when_configured() -> None:
    down = await unreachable_store()
    limits = SharedRateLimits(settings(rate_per_s=5, burst=5, shared_fail_open=False), lambda: down)
    try:
        with pytest.raises(errors.StoreUnavailable, match="shared_fail_open"):
            await limits.admit(KEY, "10.0.0.1")
        with pytest.raises(errors.StoreUnavailable):  # still refusing without asking the store (retry_s)
            await limits.admit(KEY, "10.0.0.1")
    finally:
        await down.pool.close()


async def test_addresses_stay_per_process(store: Store) -> None:
    anonymous = Principal(name="anonymous", role=Role.ADMIN, databases=frozenset({"*"}))
    config = settings(rate_per_s=0.001, burst=2)
    assert await admitted(SharedRateLimits(config, lambda: store), anonymous, 5) == 2
    assert await admitted(SharedRateLimits(config, lambda: store), anonymous, 5) == 2
    assert await store.pool.fetchval("SELECT count(*) FROM rate_buckets") == 0


async def test_a_throttled_key_is_refused_locally_until_its_next_token_is_due(store: Store) -> None:
    # Found by the attacker's review: each refused request asked the store again (a row lock per request),
    # so a flood of one key could slow the store for everyone and switch the limits to their fallback.
    config = settings(rate_per_s=0.01, burst=2, shared_lease_s=0.05)  # the next token in 100 s
    limits = SharedRateLimits(config, lambda: store)
    empty = metrics.SHARED_LIMIT_LEASES.labels("empty")
    assert await admitted(limits, KEY, 2) == 2
    before = empty._value.get()
    assert await admitted(limits, KEY, 50) == 0
    assert empty._value.get() - before == 1  # one store statement found it empty; the other 49 never asked
    other = SharedRateLimits(config, lambda: store)  # another replica: the store's bucket is empty there too
    assert await admitted(limits, KEY, 1) == 0 and await admitted(other, KEY, 1) == 0
