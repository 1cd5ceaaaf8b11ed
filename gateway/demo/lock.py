"""One ``demo`` per data directory: the demo that holds the lock owns the embedded postmaster.

A second ``demo`` on the same data directory used to adopt the running postmaster and stop it on exit,
leaving the first demo without its database. The lock is an ``flock`` on a file beside the data directory
(not inside it: ``initdb`` wants an empty directory), so it is released when its holder exits however it
exits; a postmaster left behind by a demo that was killed is then adopted and stopped by the next one.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gateway.settings import ConfigError


def lock_path(data_dir: Path) -> Path:
    """``.../pgdata`` -> ``.../.pgdata.demo-lock``."""
    return data_dir.with_name(f".{data_dir.name}.demo-lock")


@contextmanager
def demo_lock(data_dir: Path, port: int) -> Iterator[None]:
    """Hold the data directory for this demo, or raise :class:`ConfigError` naming the demo that holds it."""
    path = lock_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(_held_by(fd, data_dir)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {port}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _held_by(fd: int, data_dir: Path) -> str:
    holder = os.pread(fd, 100, 0).decode(errors="replace").split()
    who = (f"another nl2sql-gateway demo (pid {holder[0]}, http://127.0.0.1:{holder[1]})" if len(holder) == 2
           else "another nl2sql-gateway demo")
    return (f"{who} is already running on {data_dir}: use that one, stop it first, or start this one on another "
            "data directory with --data-dir (two demos on one data directory would share one Postgres, and the "
            "first to stop would stop it under the other)")
