"""Three ``serve`` processes sharing one store behind HAProxy (round robin), as tests/replicas and
bench/replicas.py start them."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from gateway.testing.haproxy import HAProxy
from tests.serving import free_port


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    base_url: str
    log: Path


@dataclass
class Cluster:
    replicas: list[Replica]
    proxy: HAProxy
    directory: Path
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return self.proxy.base_url


def _start(env: dict[str, str], directory: Path, n: int) -> Replica:
    port = free_port()
    log = directory / f"replica{n}.log"
    with log.open("wb") as out:  # a file, not a pipe: a full pipe would stop a chatty server
        process = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--port", str(port)],
                                   env={**os.environ, **env}, cwd=directory, stdout=out, stderr=out)
    return Replica(process, f"http://127.0.0.1:{port}", log)


def _wait_healthy(replica: Replica, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(replica.base_url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if replica.process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"replica did not start:\n{replica.log.read_text()[-3000:]}")
        time.sleep(0.1)


@contextmanager
def cluster(env: dict[str, str], count: int = 3) -> Iterator[Cluster]:
    """``count`` replicas with ``env`` (on top of this environment) behind HAProxy; stopped afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="nl2sqlcluster-"))
    replicas = [_start(env, directory, n) for n in range(1, count + 1)]
    proxy = HAProxy([int(r.base_url.rsplit(":", 1)[1]) for r in replicas])
    try:
        for replica in replicas:
            _wait_healthy(replica)
        proxy.start()
        yield Cluster(replicas, proxy, directory)
    finally:
        proxy.stop()
        for replica in replicas:
            if replica.process.poll() is None:
                replica.process.terminate()
        for replica in replicas:
            try:
                replica.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait()
