"""Serving the app with uvicorn: bounded request headers and a shutdown that drains.

uvicorn bounds neither how long a client may take to send a request's line and headers (its
``timeout_keep_alive`` only covers silence between requests, and every byte received cancels it) nor, with
httptools, how large they may grow; ASGI middleware cannot help, since the app is called only once the
headers are complete. :class:`BoundedHttpProtocol` adds both to uvicorn's httptools protocol:

- ``server.header_timeout_s`` from the connection's start (or from the first byte of the next request on a
  kept-alive connection) until the headers are complete: then 408 ``request_timeout`` and the connection closes;
- ``server.max_header_bytes`` on the bytes received before the headers are complete: 431 ``headers_too_large``;
- a response sent before its request's body was read whole closes the connection, so an unread body cannot
  keep trickling in once the answer is out.

The body itself is bounded by the middleware (:mod:`gateway.serving.admission`), which answers with the app's
own problem responses.

The protocol extends uvicorn's internals: :func:`gateway.serving.compat.protocol_missing` checks them once;
where httptools or one of them is missing, :func:`bounded_protocol` falls back to uvicorn's h11 protocol
bounded by ``server.max_header_bytes`` (``h11_max_incomplete_event_size``), and one warning says the header
timeout is then not enforced by the server.

:class:`DrainingServer` makes SIGTERM (and Ctrl-C) a drain that exits with status 0: from the signal on,
the listener completes no new handshake (:func:`refuse_new_connections`) while the connections already
queued are still accepted, every answer carries ``Connection: close`` and new requests on open connections
answer 503 ``shutting_down``; the listener closes, idle kept-alive connections get a moment to send one last request
(and learn the connection is closing), requests in flight finish within ``server.drain_timeout_s``, then the
lifespan closes pools and the process exits.

:func:`serve` runs one such server in this process, or with ``server.workers`` > 1 (``serve --workers N``)
that many worker processes sharing one listening socket, under a supervisor that restarts a worker that
dies, on SIGTERM or Ctrl-C stops the listener's handshakes and lets go of its own copy of it (so that it
closes with the last worker's, not when the supervisor exits with connections queued on it), forwards the
signal to every worker (each drains as above) and exits 0 once all did. Each
worker holds its own state: pools (``pool_max_size`` connections each), caches, rate limits, the in-flight
and result bounds. Prometheus metrics are collected across workers through a directory of per-process
files (``PROMETHEUS_MULTIPROC_DIR``; a temporary one the supervisor creates and removes when unset), so
``/metrics`` answers the same totals whichever worker serves the scrape.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import json
import math
import multiprocessing
import os
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
from asyncio import trsock
from collections.abc import Callable, Generator
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn
from fastapi import FastAPI

from gateway import errors
from gateway.api.problems import PROBLEM_JSON, TYPE_BASE
from gateway.observability import metrics
from gateway.observability.logging import configure_logging, get_logger
from gateway.serving.admission import BODY_READ, CLIENT_GONE, Drain
from gateway.serving.compat import protocol_missing
from gateway.settings import Settings

if TYPE_CHECKING or protocol_missing() is None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
else:  # checked and logged by compat: bounded_protocol() then serves with uvicorn's h11 protocol
    HttpToolsProtocol = RequestResponseCycle = object

log = get_logger(__name__)
AppFactory = Callable[[Settings], FastAPI]

# How long idle kept-alive connections may take to send one more request once the drain has begun: a client
# in the middle of a sequence of requests sends its next one well within it and gets a clean 503 with
# Connection: close, instead of a connection closed under a request it may already be sending.
IDLE_GRACE_S = 1.0


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline and a size bound on each request's line and headers.

    Also, per request: a response head with a Content-Length leaves in the same write as the body's first
    bytes (:class:`_HeldHead`), a request whose body arrived whole with its headers is marked so that the
    middleware reads it without arming a timer (``BODY_READ`` in the scope), and a route can be told when its
    client goes away without a task waiting on ``receive()`` for it (``CLIENT_GONE``, :class:`_ClientWatch`)."""

    header_timeout_s: float = 10.0
    max_header_bytes: int = 65_536

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # One timer per connection rather than one per request: on_message_begin only moves the deadline,
        # and the timer, when it fires early, sleeps until the current one (see _headers_late).
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_deadline: float | None = None  # set while a request's line and headers are awaited
        self._header_bytes = 0
        super().connection_made(transport)
        self._arm()  # a connection that never sends anything is bounded too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
        cycle = self.cycle
        if cycle is not None and cycle.disconnected:  # what receive() would now answer http.disconnect for
            watch = cycle.scope.get(CLIENT_GONE)
            if isinstance(watch, _ClientWatch):
                watch.gone()

    def data_received(self, data: bytes) -> None:
        awaiting_headers = self._header_deadline is not None
        if awaiting_headers:
            self._header_bytes += len(data)
        super().data_received(data)
        if awaiting_headers and self._header_deadline is not None and self._header_bytes > self.max_header_bytes:
            self._refuse(errors.HeadersTooLarge(
                f"the request line and headers exceed {self.max_header_bytes} bytes (server.max_header_bytes)"))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._header_deadline = None  # the timer stays: it serves the next request on this connection
        existing = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not existing:
            held = _HeldHead(self.transport, cycle)
            cycle.transport = held  # type: ignore[assignment]
            done = cycle.on_response
            watch = _ClientWatch(cycle)

            def on_response() -> None:
                # A HEAD answer, or one whose body was empty: this request's head alone. Flushed through the
                # request's own callback, not self.cycle: a pipelined next request has taken that already.
                held.flush()
                # The answer is out: neither needs the cycle any more. Each referred to it while it referred
                # to them, a reference cycle per request that only the cyclic collector could free (12
                # objects a request, and most of the collector's work).
                held.let_go()
                watch.let_go()
                done()

            cycle.on_response = on_response
            cycle.scope[CLIENT_GONE] = watch  # type: ignore[literal-required]

    def on_message_complete(self) -> None:
        super().on_message_complete()
        cycle = self.cycle
        if cycle is not None and not cycle.more_body:
            cycle.scope[BODY_READ] = True  # type: ignore[literal-required]

    def on_response_complete(self) -> None:
        super().on_response_complete()
        cycle = self.cycle
        if cycle is not None and cycle.more_body and not self.transport.is_closing():
            self.transport.close()  # answered before the body was read whole: do not read it any further

    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_bytes = 0
            self._header_deadline = self.loop.time() + self.header_timeout_s
        if self._header_timer is None:
            self._header_timer = self.loop.call_at(self._header_deadline, self._headers_late)

    def _disarm(self) -> None:
        self._header_deadline = None
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        deadline = self._header_deadline
        if deadline is None:
            return  # no request being received: the next one arms the timer again
        if self.loop.time() < deadline:
            self._header_timer = self.loop.call_at(deadline, self._headers_late)  # moved since armed
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # The previous request is still being answered: the clock starts once it is done.
            self._header_deadline = None
            self._arm()
            return
        self._refuse(errors.RequestTimeout(
            f"the request line and headers did not arrive within {self.header_timeout_s:g} s "
            "(server.header_timeout_s)"))

    def _refuse(self, error: errors.GatewayError) -> None:
        self._disarm()
        if self.transport.is_closing():
            return
        body = json.dumps({"type": TYPE_BASE + error.code, "title": error.title, "status": error.status,
                           "detail": error.detail, "code": error.code}).encode()
        head = (f"HTTP/1.1 {error.status} {error.title}\r\ncontent-type: {PROBLEM_JSON}\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
        self.transport.write(head + body)
        self.transport.close()


class _ClientWatch:
    """``watch(callback)`` for one request: ``callback`` runs once when its client goes away, as a task
    waiting on the ASGI ``receive()`` would learn it (uvicorn marks the current cycle disconnected when the
    connection is lost); the call returns the function that stops watching. A client gone already is
    reported on the loop's next turn."""

    __slots__ = ("_callback", "_cycle")

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle: RequestResponseCycle | None = cycle
        self._callback: Callable[[], None] | None = None

    def __call__(self, callback: Callable[[], None]) -> Callable[[], None]:
        cycle = self._cycle
        if cycle is None:  # the answer is out already: there is nothing left to cancel
            return _nothing
        if cycle.disconnected:
            # Not called here: this runs in the request's task, which a cancel now would hit at whatever
            # await comes next, past the work it is meant for. Soon, while the task waits in its work; a work
            # that ends before it ever waits unwatches, and the call never comes.
            return asyncio.get_running_loop().call_soon(callback).cancel
        self._callback = callback
        cycle.flow.resume_reading()  # as receive() does: a close is only seen while the socket is read
        return self._unwatch

    def let_go(self) -> None:
        """The request has been answered: forget its cycle (and any callback)."""
        self._cycle = self._callback = None

    def _unwatch(self) -> None:
        self._callback = None

    def gone(self) -> None:
        callback, self._callback = self._callback, None
        if callback is not None:
            callback()


def _nothing() -> None:
    return None


class _HeldHead:
    """The transport as one request's response cycle sees it. uvicorn writes a response's head and body
    separately: two send(2) calls, two segments, and two wake-ups of the client for one small answer (py-spy:
    a quarter of the no-op route's samples were in these writes). A head that announces a Content-Length is
    held until the first body bytes and leaves with them; any other write, close() and the end of the
    response send it first. Chunked responses (streams) get their head at once: their first chunk may take
    a while."""

    __slots__ = ("_cycle", "_head", "_head_seen", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self._transport = transport
        self._cycle: RequestResponseCycle | None = cycle
        self._head: bytes | None = None
        self._head_seen = False

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            if len(data) < 65_536:
                self._transport.write(head + data)
            else:
                self._transport.writelines((head, data))
            return
        cycle = self._cycle
        if not self._head_seen and cycle is not None and cycle.response_started:
            # The head: send() writes it right after marking the response started (a "100 Continue" comes
            # before that), with chunked_encoding already decided.
            self._head_seen = True
            if cycle.chunked_encoding is False:
                self._head = data
                return
        self._transport.write(data)

    def let_go(self) -> None:
        """The response is complete: forget the cycle (what is written now goes straight through)."""
        self._cycle = None

    def flush(self) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> object:
        return getattr(self._transport, name)


# SO_ATTACH_FILTER (Linux) with a classic BPF program, run on each TCP segment from its TCP header: drop a
# segment whose flags are SYN without ACK (a new connection's first packet), keep every other. Dropping every
# packet instead (an earlier version) also dropped the last ACK of a handshake whose SYN-ACK had left just
# before: the client saw a connection that the server never completed, and its request went unanswered.
_SO_ATTACH_FILTER = 26
_DROP_NEW_CONNECTIONS = b"".join(struct.pack("HBBI", *instruction) for instruction in (
    (0x30, 0, 0, 13),  # BPF_LD | BPF_B | BPF_ABS: the flags byte of the TCP header
    (0x54, 0, 0, 0x12),  # BPF_ALU | BPF_AND | BPF_K: SYN and ACK only
    (0x15, 0, 1, 0x02),  # BPF_JMP | BPF_JEQ | BPF_K: SYN alone? on to the next, else skip it
    (0x06, 0, 0, 0),  # BPF_RET | BPF_K: keep 0 bytes (drop)
    (0x06, 0, 0, 0xFFFFFFFF),  # BPF_RET | BPF_K: keep the whole segment
))


def refuse_new_connections(sock: socket.socket | trsock.TransportSocket) -> bool:
    """Make a listening socket complete no more handshakes while the connections it has queued can still be
    accepted; False where the platform cannot (the drain then relies on closing the listener alone).

    Closing a listener resets the connections the kernel queued on it but nobody accepted yet: a client that
    connected during a drain would lose its request without an answer. A socket filter that drops every
    connection's first packet (a SYN without ACK) stops new handshakes (on the socket itself, so in every
    process sharing it), lets the handshakes already answered complete, and leaves the queue to the accept
    loops; a client that tries meanwhile retransmits its SYN and is refused once the listener is closed.
    """
    if not sys.platform.startswith("linux"):
        return False
    program = ctypes.create_string_buffer(_DROP_NEW_CONNECTIONS)
    # struct sock_fprog {len; filter pointer}; each instruction is 8 bytes
    fprog = struct.pack("HL", len(_DROP_NEW_CONNECTIONS) // 8, ctypes.addressof(program))
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
    except OSError as exc:
        log.warning("listener_filter_failed", error=str(exc))
        return False
    return True


class DrainingServer(uvicorn.Server):
    """uvicorn's server, with the drain described in the module docstring and exit status 0 after it."""

    def __init__(self, config: uvicorn.Config, drain: Drain, early: list[int] | None = None, *,
                 owns_listener: bool = True) -> None:
        super().__init__(config)
        self.drain = drain
        self.early = early if early is not None else []  # signals received before the handlers below
        # A worker shares its listener with the others: the filter would stop them too (the supervisor sets
        # it when the whole server drains), and a worker stopped on its own must not.
        self.owns_listener = owns_listener

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.drain.start()  # at once, not at uvicorn's next tick: answers from now on close their connection
        if self.owns_listener:
            for server in getattr(self, "servers", []):
                for listener in server.sockets:
                    refuse_new_connections(listener)
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        # uvicorn re-raises the signal after its graceful shutdown, so the process dies of SIGTERM (143).
        # A completed drain is a clean exit: handle the signals, restore the handlers, raise nothing.
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in self.early:  # a worker told to stop while it was starting: start, then drain at once
            self.handle_exit(sig, None)
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in getattr(self, "servers", []):
            server.close()  # no new connections; the ones open may still send one request each
        loop = asyncio.get_running_loop()
        until = loop.time() + min(IDLE_GRACE_S, self.config.timeout_graceful_shutdown or IDLE_GRACE_S)
        while self.server_state.connections and loop.time() < until and not self.force_exit:
            await asyncio.sleep(0.05)
        await super().shutdown(sockets)


def bounded_protocol(settings: Settings) -> type[BoundedHttpProtocol] | str:
    """The protocol class with this server's bounds (uvicorn instantiates it once per connection); ``"h11"``
    where the installed uvicorn lacks an internal it extends (see the module docstring)."""
    if protocol_missing() is not None:
        return "h11"
    return type("GatewayHttpProtocol", (BoundedHttpProtocol,), {
        "header_timeout_s": settings.server.header_timeout_s,
        "max_header_bytes": settings.server.max_header_bytes,
    })


def _config(app: FastAPI, settings: Settings) -> uvicorn.Config:
    protocol = bounded_protocol(settings)
    extra: dict[str, Any] = {} if protocol != "h11" else {
        "h11_max_incomplete_event_size": settings.server.max_header_bytes}
    return uvicorn.Config(
        app, host=settings.server.host, port=settings.server.port, http=protocol,
        log_config=None, access_log=False, timeout_graceful_shutdown=math.ceil(settings.server.drain_timeout_s),
        **extra,
    )


# The cyclic collector's young-generation threshold in a serving process (Python's default: 700). Each young
# collection walks every object the requests in flight still hold (their coroutine frames, scopes, rows): at
# 700 that was one collection per ~18 /v1/sql requests and 15 us of collector per request at 16 connections,
# 26 us at 64. At 7,000 it is 2-3 collections a second and 5-7 us. Objects are still freed by their
# reference counts as before; only garbage in reference cycles waits longer for its collection.
YOUNG_GC_THRESHOLD = 7_000


def tune_collector() -> None:
    """Raise the young-generation threshold of the cyclic collector to :data:`YOUNG_GC_THRESHOLD`; a higher
    one, or a collector switched off (threshold 0), is left as it is."""
    young, older, oldest = gc.get_threshold()
    if 0 < young < YOUNG_GC_THRESHOLD:
        gc.set_threshold(YOUNG_GC_THRESHOLD, older, oldest)


def run(app: FastAPI, settings: Settings, sockets: list[socket.socket] | None = None,
        early: list[int] | None = None) -> None:
    """Serve ``app`` on ``server.host:server.port`` (or ``sockets``) until SIGTERM or Ctrl-C, then drain and
    return. ``early``: signals that arrived before serving began (they stop the server once it started)."""
    tune_collector()
    drain = getattr(app.state, "drain", None) or Drain()
    DrainingServer(_config(app, settings), drain, early, owns_listener=sockets is None).run(sockets=sockets)


def serve(settings: Settings, factory: AppFactory, workers: int | None = None) -> int:
    """Serve the app ``factory(settings)`` builds (``gateway.api.app.create_app`` for the gateway: the caller
    names it, so that server plumbing never builds the app itself) with ``workers`` processes
    (``server.workers`` by default); return the exit status: 0 after a clean drain of every worker."""
    workers = settings.server.workers if workers is None else workers
    if workers <= 1:
        run(factory(settings), settings)
        return 0
    return Supervisor(settings, factory, workers).run()


def _worker(settings: Settings, factory: AppFactory, sock: socket.socket) -> None:
    """A worker process: its own app (and so its own Gateway, pools and caches) on the shared socket."""
    early: list[int] = []  # SIGTERM while importing or building the app: drain once serving, exit 0
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda received, _frame: early.append(received))
    configure_logging(settings.logging.level, settings.logging.json_logs)
    run(factory(settings), settings, sockets=[sock], early=early)


class Supervisor:
    """Worker processes on one listening socket; see the module docstring."""

    def __init__(self, settings: Settings, factory: AppFactory, workers: int) -> None:
        self.settings = settings
        self.factory = factory
        self.workers = workers
        self.stopping = False
        self._context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited loop or pools

    def run(self) -> int:
        metrics_dir, owned = _multiprocess_dir()
        config = _config(FastAPI(), self.settings)
        sock = config.bind_socket()
        sock.listen(config.backlog)  # connections wait in the backlog while the workers start
        original = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        processes: list[BaseProcess] = []
        try:
            processes = [self._start(sock) for _ in range(self.workers)]
            log.info("workers_started", workers=self.workers, pids=[p.pid for p in processes],
                     host=self.settings.server.host, port=self.settings.server.port, metrics_dir=str(metrics_dir))
            from gateway.serving.banner import print_banner  # each worker checks privileges; their log lines say it

            print_banner(self.settings, None)
            while not self.stopping:
                wait([p.sentinel for p in processes], timeout=0.5)
                for i, process in enumerate(processes):
                    if not process.is_alive() and not self.stopping:
                        # A worker that dies (a crash, the OOM killer) is replaced; its live gauges go.
                        log.warning("worker_died", pid=process.pid, exitcode=process.exitcode)
                        metrics.process_dead(process.pid)
                        processes[i] = self._start(sock)
            # No new connection from now on (the queued ones are still accepted and answered by the workers),
            # and let go of the listener so that it closes with the last worker's copy instead of holding
            # connections the kernel accepted until this process exits and resets them.
            refuse_new_connections(sock)
            sock.close()
            return self._drain(processes)
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)
            sock.close()
            if owned:
                shutil.rmtree(metrics_dir, ignore_errors=True)

    def _start(self, sock: socket.socket) -> BaseProcess:
        process = self._context.Process(target=_worker, args=(self.settings, self.factory, sock),
                                        name="nl2sql-gateway-worker")
        process.start()
        return process

    def _stop(self, sig: int, frame: FrameType | None) -> None:
        self.stopping = True

    def _drain(self, processes: list[BaseProcess]) -> int:
        """SIGTERM to every worker (each drains), wait for all; 0 when every one exited cleanly."""
        for process in processes:
            if process.is_alive() and process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGTERM)
        grace = self.settings.server.drain_timeout_s + IDLE_GRACE_S + 10  # the lifespan closes pools too
        status = 0
        for process in processes:
            process.join(timeout=grace)
            if process.is_alive():
                log.warning("worker_killed", pid=process.pid, after_s=grace)
                process.kill()
                process.join()
            # -SIGTERM: the signal came before the worker could handle it (it was still importing the
            # gateway), so it never served anything; any other status is a worker that failed.
            if process.exitcode not in (0, -signal.SIGTERM):
                status = 1
            metrics.process_dead(process.pid)
        log.info("workers_stopped", status=status)
        return status


def _multiprocess_dir() -> tuple[Path, bool]:
    """The directory the workers' metrics go to, emptied; True when this process created it (and removes it).

    Set before any worker starts: prometheus_client picks its multiprocess storage when it is imported."""
    given = os.environ.get(metrics.MULTIPROC_ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):  # a previous run's counts must not add to this one's
            if not stale.stem.endswith(f"_{os.getpid()}"):
                stale.unlink()
        return path, False
    path = Path(tempfile.mkdtemp(prefix="nl2sql-metrics-"))
    os.environ[metrics.MULTIPROC_ENV] = str(path)
    return path, True
