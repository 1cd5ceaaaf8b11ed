"""Result bytes counted on the wire, as the driver receives them, before anything is decoded.

asyncpg decodes a row only once its whole DataRow message has arrived, so a single value (a ``json_agg``
of a table) is held whole as received bytes, then as the message assembled from them, then as decoded
text and objects before any batch can be measured. :class:`Meter` sits between the socket and asyncpg's
protocol (``transport.set_protocol``): while a query's :class:`~gateway.execute.budget.Lease` is attached,
every chunk received is charged to it *before* asyncpg sees it, at ``per_byte`` bytes of memory per byte
received (what the bytes will be while they are decoded). When the charge does not fit the process's
result budget, or the bytes received cross the query's own ``max_result_bytes``, the connection is aborted
at once: the chunk is dropped, asyncpg's pending fetch fails with a lost connection, and the run path
raises :attr:`Meter.error` instead (the pool opens a fresh connection). The batch's charge is settled to
its measured size once it has been decoded (:meth:`gateway.execute.budget.Lease.settle`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gateway import errors
from gateway.execute import statements
from gateway.execute.budget import Lease

# Memory per byte received while a batch is decoded: the received chunks, which asyncpg moves into one
# message as they are read (each chunk freed as it is copied), and the text decoded from the message.
PER_BYTE = 2
# JSON and JSONB are decoded into Python objects, which take several times their text (3.8 times for the
# rows of a json_agg over a table of mixed columns, measured with the budget's own sizes): reserved ahead
# of the decode, settled to the measured size after it.
JSON_EXPANSION = 4
JSON_TYPES = frozenset({"json", "jsonb", "_json", "_jsonb"})


class Meter(asyncio.Protocol):
    """The connection's protocol as the transport sees it; forwards everything to asyncpg's."""

    def __init__(self, protocol: Any, transport: asyncio.BaseTransport) -> None:
        self.protocol = protocol
        self.transport = transport
        self.lease: Lease | None = None
        self.per_byte = PER_BYTE
        self.limit: int | None = None  # the query's max_result_bytes
        self.too_large: Callable[[], errors.GatewayError] | None = None
        self.error: errors.GatewayError | None = None
        self.received = 0

    def data_received(self, data: bytes) -> None:
        lease = self.lease
        if lease is not None and self.error is None:
            self.received += len(data)
            self.error = lease.charge_wire(len(data), self.per_byte, self.limit, self.too_large)
            if self.error is not None:
                # No exception may leave here (it would reach the event loop, not the query): end the
                # connection, which fails asyncpg's pending fetch; the run path raises self.error.
                self.transport.abort()  # type: ignore[attr-defined]
                return
        if self.error is None:
            self.protocol.data_received(data)

    def eof_received(self) -> bool | None:
        return self.protocol.eof_received()  # type: ignore[no-any-return]

    def connection_lost(self, exc: Exception | None) -> None:
        protocol, self.protocol = self.protocol, _Gone()
        # Nothing of the ended connection (its partly received message) may stay reachable from here.
        self.lease = self.too_large = None
        protocol.connection_lost(exc)

    def pause_writing(self) -> None:
        self.protocol.pause_writing()

    def resume_writing(self) -> None:
        self.protocol.resume_writing()


class _Gone:
    """The protocol of a connection that has been lost: whatever the transport still reports is dropped."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


def meter_of(conn: Any) -> Meter | None:
    """The connection's meter, installed on first use; None when the transport cannot take one."""
    connection = statements.raw(conn)
    transport = getattr(connection, "_transport", None)
    if transport is None or not hasattr(transport, "set_protocol"):
        return None
    current = transport.get_protocol()
    if isinstance(current, Meter):
        return current
    meter = Meter(current, transport)
    transport.set_protocol(meter)
    return meter


def attach(conn: Any, lease: Lease, limit: int, too_large: Callable[[], errors.GatewayError]) -> Meter | None:
    """Charge what ``conn`` receives to ``lease`` (``limit``: the query's max_result_bytes) until
    :func:`detach`."""
    meter = meter_of(conn)
    if meter is not None:
        meter.lease, meter.limit, meter.too_large, meter.error = lease, limit, too_large, None
        meter.per_byte, meter.received = PER_BYTE, 0
    return meter


def detach(meter: Meter | None, lease: Lease) -> None:
    if meter is not None:
        meter.lease = meter.too_large = meter.error = None  # the error, raised by now, holds the query's frames
    lease.settle()  # nothing received is undecoded any more: what was kept has been measured


def expect(meter: Meter | None, column_types: list[str]) -> None:
    """Reserve for the decode of the statement's columns: JSON becomes objects larger than its text."""
    if meter is not None:
        meter.per_byte = PER_BYTE + (JSON_EXPANSION if any(t in JSON_TYPES for t in column_types) else 0)
