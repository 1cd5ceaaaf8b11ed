"""Changes every replica must see within a second, through the store's ``LISTEN``/``NOTIFY``.

Triggers (migration 0009) bump a version per kind in ``store_changes`` whenever a row of ``api_keys``
(``keys``: revocation, a new key), ``guideline_versions`` (``guidelines``: activation, rollback, reset) or
``verified_examples`` (``examples``: approval) changes, whoever writes it, and announce
``<kind>:<version>:<detail>`` on the channel :data:`CHANNEL`. :class:`ChangeFeed` listens on a connection of
its own, straight to the store (a transaction pooler cannot hold a ``LISTEN``), and calls ``on_change(kind,
detail)`` for each change it has not seen; ``detail`` is the API key's id or the guideline's database ('':
the global one, or everything of that kind). Every ``store.change_recheck_s`` it re-reads the versions (and
reconnects when the connection was lost), so a lost notification costs at most that long.

>>> feed = ChangeFeed(settings.store, on_change=lambda kind, detail: print(kind, detail))  # doctest: +SKIP
>>> await feed.start(); feed.versions  # {'examples': 0, 'guidelines': 3, 'keys': 7}  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import asyncpg

from gateway.execute import faults
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.settings import StoreSettings

log = get_logger(__name__)

CHANNEL = "nl2sql_changes"
CONNECT_TIMEOUT_S = 5.0
# Besides outages: a store not migrated yet (no store_changes with store.migrate_on_start off) must not stop
# the replica; the re-check tries again.
_FAILURES: tuple[type[BaseException], ...] = (*faults.FAULTS, TimeoutError, asyncpg.PostgresError,
                                              asyncpg.InterfaceError)


class ChangeFeed:
    """One replica's view of the store's change versions, kept current by notifications and re-checks."""

    def __init__(self, settings: StoreSettings, on_change: Callable[[str, str], None]) -> None:
        self.settings = settings
        self.on_change = on_change
        self.versions: dict[str, int] = {}
        self.received_at: dict[str, float] = {}  # kind -> time.time() of the last change applied
        self._conn: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def listening(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def start(self) -> None:
        """Listen and read the versions now (a failure is logged: the re-check loop tries again)."""
        await self._connect()
        self._task = asyncio.create_task(self._recheck_loop(), name="store-changes")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.close(), timeout=2)
            self._conn = None

    def report(self) -> dict[str, object]:
        """What /readyz shows: whether this replica listens, and the versions it serves."""
        return {"listening": self.listening, "versions": dict(sorted(self.versions.items()))}

    async def _connect(self) -> None:
        password = self.settings.password.get_secret_value() if self.settings.password else None
        try:
            conn = await asyncpg.connect(self.settings.dsn, password=password, timeout=CONNECT_TIMEOUT_S,
                                         statement_cache_size=0)
            await conn.add_listener(CHANNEL, self._notified)
            self._conn = conn
            await self._recheck()  # after LISTEN: nothing committed between the two is missed
            log.info("store_changes_listening", versions=self.versions)
        except _FAILURES as exc:
            log.warning("store_changes_unavailable", error=repr(exc), retry_s=self.settings.change_recheck_s)
            if self._conn is not None:
                self._conn.terminate()
            self._conn = None

    async def _recheck(self) -> None:
        assert self._conn is not None
        rows = await self._conn.fetch("SELECT kind, version FROM store_changes")
        for row in rows:
            self._apply(row["kind"], int(row["version"]), "")

    async def _recheck_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.change_recheck_s)
            if not self.listening:
                await self._connect()
                continue
            try:
                await self._recheck()
            except _FAILURES as exc:
                log.warning("store_changes_recheck_failed", error=repr(exc))
                if self._conn is not None:
                    self._conn.terminate()
                self._conn = None

    def _notified(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        kind, _, rest = payload.partition(":")
        version, _, detail = rest.partition(":")
        if version.isdigit():
            self._apply(kind, int(version), detail)

    def _apply(self, kind: str, version: int, detail: str) -> None:
        seen = self.versions.get(kind)
        if seen is not None and version <= seen:
            return
        first = seen is None
        self.versions[kind] = version
        metrics.STORE_CHANGE_VERSION.labels(kind).set(version)
        if first:
            return  # the versions read at start-up: nothing cached yet to drop
        # A jump of more than one (lost notifications, or a re-check) drops everything of that kind.
        self.received_at[kind] = time.time()
        try:
            self.on_change(kind, detail if version == seen + 1 else "")  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - a listener callback must never end the feed
            log.error("store_change_handler_failed", kind=kind, error=repr(exc))
