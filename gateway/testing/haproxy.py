"""Debian's HAProxy in front of several gateway replicas (round robin, no sticky sessions), for tests and benches.

>>> with HAProxy([8001, 8002, 8003]) as proxy:  # doctest: +SKIP
...     httpx.get(proxy.base_url + "/healthz")
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gateway.testing.loopback import executable, free_port, listening, terminate

BINARY_CANDIDATES = ("haproxy", "/usr/sbin/haproxy")


def binary() -> str | None:
    """The haproxy executable, or None when it is not installed."""
    return executable(BINARY_CANDIDATES)


class HAProxy:
    """One haproxy process balancing HTTP requests round robin over ``ports`` on 127.0.0.1."""

    def __init__(self, ports: Sequence[int]) -> None:
        self.ports = list(ports)
        self.port = 0
        self.directory: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        exe = binary()
        if exe is None:
            raise FileNotFoundError("haproxy is not installed (Debian: apt-get install haproxy)")
        self.directory = Path(tempfile.mkdtemp(prefix="nl2sqlhaproxy-"))
        self.port = free_port()
        servers = "".join(f"    server r{n} 127.0.0.1:{port} check inter 500ms fall 1 rise 1\n"
                          for n, port in enumerate(self.ports, start=1))
        config = self.directory / "haproxy.cfg"
        config.write_text(
            "global\n    maxconn 1000\n"
            "defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n"
            # A request a dead replica never answered goes to another one (only when nothing was sent back).
            "    retries 2\n    option redispatch 1\n    retry-on conn-failure empty-response response-timeout\n"
            f"frontend gateway\n    bind 127.0.0.1:{self.port}\n    default_backend replicas\n"
            "backend replicas\n    balance roundrobin\n    option httpchk GET /healthz\n" + servers
        )
        self.process = subprocess.Popen([exe, "-db", "-f", str(config)], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not listening(self.process, self.port, 10):
            self.stop()
            raise RuntimeError("haproxy did not start")

    def stop(self) -> None:
        terminate(self.process)
        self.process = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> HAProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
