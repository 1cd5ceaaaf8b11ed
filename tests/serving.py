"""The gateway under test: `nl2sql-gateway serve` as a real process on loopback, or the app in-process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from gateway.api.app import create_app
from gateway.settings import Settings
from gateway.state import GatewayState


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoggedProcess(subprocess.Popen[str]):
    """A child process whose stderr goes to a file, read back by ``communicate()`` and ``log_text()``.

    Why not a pipe: nobody reads a pipe while the test runs, and once ~64 KiB of log lines (about 190
    request lines) fill it, the server's next log write blocks its event loop, and a request hangs.
    """

    def __init__(self, args: Sequence[str], *, log: Path, **kwargs: Any) -> None:
        self.log = log
        with log.open("w") as sink:  # the child keeps its own copy of the descriptor
            super().__init__(args, stderr=sink, text=True, **kwargs)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def communicate(self, input: str | None = None, timeout: float | None = None) -> tuple[Any, Any]:
        out, _ = super().communicate(input, timeout)
        return out, self.log_text()


def start_serve(env: dict[str, str], cwd: Path, *, stdout: int = subprocess.DEVNULL,
                timeout_s: float = 120, command: Sequence[str] = (sys.executable, "-m", "gateway"),
                args: tuple[str, ...] = (), unset: tuple[str, ...] = ()) -> tuple[LoggedProcess, str]:
    """Start the server with ``env`` on top of this environment (less ``unset``) and ``args`` after
    ``serve``; return once ``/healthz`` answers.

    The process's stderr goes to ``serve-<port>.log`` in ``cwd`` (``communicate()`` and ``log_text()`` read
    it); its base URL is returned with it. ``command`` is how to run the CLI (another installation's
    ``nl2sql-gateway`` script, say).
    """
    port = free_port()
    environ = {k: v for k, v in {**os.environ, **env}.items() if k not in unset}
    proc = LoggedProcess([*command, "serve", "--port", str(port), *args], log=cwd / f"serve-{port}.log",
                         env=environ, cwd=cwd, stdout=stdout)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, stderr = proc.communicate(timeout=30)
            raise AssertionError(f"the server did not start: {stderr}")
        time.sleep(0.1)


@asynccontextmanager
async def in_process(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, GatewayState]]:
    """The app with its real lifespan, driven in-process over ASGI (an LLM is still reached over real HTTP)."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=120) as http:
            yield http, app.state.gateway
