"""Servers on loopback for tests and benches: an ASGI app under uvicorn in a thread, a silent listener, a free
port and a Debian program's executable (pgbouncer, haproxy) for the servers the tests start.

>>> with silent_listener() as port:  # doctest: +SKIP
...     ...  # connections to 127.0.0.1:port are accepted and never answered
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp


def free_port() -> int:
    """A port free on 127.0.0.1 now (a process started next binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def executable(candidates: tuple[str, ...]) -> str | None:
    """The first of ``candidates`` (names on PATH or absolute paths) that is installed, or None."""
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    return None


def listening(process: subprocess.Popen[bytes], port: int, seconds: float) -> bool:
    """Wait until ``process`` accepts connections on 127.0.0.1:``port``; False when it exited first or
    ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def terminate(process: subprocess.Popen[bytes] | None) -> None:
    """End ``process`` (SIGTERM, then SIGKILL after 10 s) if it still runs."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve(app: ASGIApp, name: str, port: int = 0) -> tuple[uvicorn.Server, threading.Thread, int]:
    """``app`` under uvicorn on 127.0.0.1:``port`` (0: any free one) in a daemon thread, once it listens;
    returns the server, its thread and the port. :func:`stop` ends it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            limit_concurrency=10_000, backlog=4096)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start")
        time.sleep(0.01)
    return server, thread, sock.getsockname()[1]


def stop(server: uvicorn.Server | None, thread: threading.Thread | None) -> None:
    if server is not None:
        server.should_exit = True
    if thread is not None:
        thread.join(timeout=10)


@contextmanager
def silent_listener(backlog: int = 512) -> Iterator[int]:
    """A loopback port that accepts connections and never reads nor answers (a frozen host, a network cut
    without resets); yields the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(backlog)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for sock in held:
            sock.close()
        listener.close()
