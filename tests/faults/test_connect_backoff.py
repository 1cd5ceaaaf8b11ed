"""A failed connect or login is not retried per request: new connections to that target back off.

Counted on the wire: a loopback TCP proxy in front of the real server counts the connections (each one a
login attempt) the gateway opens."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import parse_qs, urlsplit, urlunsplit

import pytest
from pydantic import SecretStr

from gateway.execute import faults
from gateway.execute.backoff import ConnectBackoff
from tests.backpressure.helpers import build_settings, running
from tests.faults.test_driver_faults import SQL, password_role  # noqa: F401 - the fixture

REFUSED = "postgresql://nobody@127.0.0.1:1/none"  # nothing listens on port 1


class CountingProxy:
    """Forwards loopback TCP connections to the server of ``dsn`` (TCP or its unix socket) and counts them."""

    def __init__(self, dsn: str) -> None:
        parts = urlsplit(dsn)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.host = query.get("host") or parts.hostname or "127.0.0.1"
        self.port_of_server = int(query.get("port") or parts.port or 5432)
        self.accepted = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> CountingProxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.host.startswith("/"):
            up_reader, up_writer = await asyncio.open_unix_connection(f"{self.host}/.s.PGSQL.{self.port_of_server}")
        else:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port_of_server)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def through(dsn: str, port: int) -> str:
    """``dsn`` over TCP to the proxy on ``port``."""
    parts = urlsplit(dsn)
    user = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{port}", query=""))


def test_a_wrong_password_is_tried_once_not_once_per_request(pg, password_role: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    dsn = pg.dsn("nl2sql_test_demo", user=password_role)

    async def scenario() -> tuple[int, list, int]:  # type: ignore[type-arg]
        async with CountingProxy(dsn) as proxy:
            settings = build_settings(through(dsn, proxy.port), pool_max_size=10)
            # a backoff longer than the scenario: how many logins, not how fast, is what is asserted
            settings.databases["demo"] = settings.databases["demo"].model_copy(update={
                "password": SecretStr("wrong-password"), "pool_min_size": 2, "connect_backoff_s": 30.0})
            async with running(settings) as (http, _):
                answers = []
                for _ in range(3):
                    answers += await asyncio.gather(*(http.post("/v1/sql", json=SQL) for _ in range(20)))
                ready = await http.get("/readyz")
            return proxy.accepted, answers, ready.status_code

    logins, answers, ready = asyncio.run(scenario())
    assert ready == 503
    for answer in answers:
        problem = answer.json()
        assert answer.status_code == 503 and problem["code"] == "database_unavailable", answer.text
        assert problem["setting"] == "databases.demo.password", problem  # still names what to fix
        assert "InvalidPasswordError" in problem["detail"] and "wrong-password" not in answer.text
    # start-up's pool prewarm and 60 requests in three bursts, plus /readyz: one login
    assert logins == 1, logins


async def test_the_backoff_doubles_counts_a_burst_once_and_a_success_ends_it(demo_dsn: str) -> None:
    now = [0.0]
    backoff = ConnectBackoff("demo", first_s=1.0, max_s=3.0, clock=lambda: now[0])

    with pytest.raises(OSError) as refused:
        await backoff.connect(REFUSED)
    assert not isinstance(refused.value, faults.ConnectPaused)
    # within the backoff nothing goes out, even to an address that would work; the last failure is named
    with pytest.raises(faults.ConnectPaused) as paused:
        await backoff.connect(demo_dsn)
    assert paused.value.cause is refused.value and faults.classify(paused.value) is faults.Fault.UNAVAILABLE

    now[0] = 1.01
    # the window is over: one probe goes out, the others wait for its outcome and share it
    outcomes = await asyncio.gather(*(backoff.connect(REFUSED) for _ in range(10)), return_exceptions=True)
    kinds = sorted(type(o).__name__ for o in outcomes)
    assert kinds.count("ConnectPaused") == 9 and backoff.failures == 2 and backoff.wait_s == 2.0, kinds

    now[0] = 10.0
    conn = await backoff.connect(demo_dsn)
    await conn.close()
    assert backoff.healthy and backoff.failures == 0

    # healthy: connects go out in parallel; a burst of parallel failures counts as one
    outcomes = await asyncio.gather(*(backoff.connect(REFUSED) for _ in range(5)), return_exceptions=True)
    assert not any(isinstance(o, faults.ConnectPaused) for o in outcomes) and backoff.failures == 1
    assert backoff.until == pytest.approx(11.0)
    for _ in range(5):
        now[0] = backoff.until + 0.01
        with pytest.raises(OSError):
            await backoff.connect(REFUSED)
    assert backoff.wait_s == 3.0  # capped at max_s
