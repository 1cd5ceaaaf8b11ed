"""PgBouncer in transaction mode in front of a PostgreSQL server, for tests and benches.

Debian's ``pgbouncer`` package (1.18) is started as a child process on a free port of 127.0.0.1, with a
configuration written to a fresh directory: ``pool_mode = transaction``, every database of the upstream
server reachable under its own name (``* = ...``), trust authentication for the users named. As root,
PgBouncer refuses to run, so it runs as the embedded server's system user, like the server itself.

>>> with PgBouncer(upstream_host="/tmp/pgdata", upstream_port=5432) as bouncer:  # doctest: +SKIP
...     bouncer.dsn("demo", "nl2sql_reader")  # 'postgresql://nl2sql_reader@127.0.0.1:PORT/demo'
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

from gateway.demo.embedded import SYSTEM_USER_WHEN_ROOT
from gateway.testing.loopback import executable, free_port, listening, terminate

BINARY_CANDIDATES = ("pgbouncer", "/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


def binary() -> str | None:
    """The pgbouncer executable, or None when it is not installed."""
    return executable(BINARY_CANDIDATES)


class PgBouncer:
    """One PgBouncer process in transaction mode; ``dsn(database, user)`` reaches the upstream through it."""

    def __init__(self, upstream_host: str, upstream_port: int, users: tuple[str, ...] = ("postgres",),
                 pool_size: int = 20) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.users = users
        self.pool_size = pool_size
        self.port = 0
        self.directory: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = binary()
        if exe is None:
            raise FileNotFoundError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
        self.directory = Path(tempfile.mkdtemp(prefix="nl2sqlbouncer-"))
        self.port = free_port()
        auth = "".join(f'"{u}" ""\n' for u in self.users)
        (self.directory / "users.txt").write_text(auth)
        (self.directory / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={self.upstream_host} port={self.upstream_port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.directory / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool_size}\nmax_client_conn = 1000\n"
            # asyncpg's startup packet carries no other parameters; tools may send these.
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {self.directory / 'pgbouncer.log'}\n"
            "server_reset_query =\nserver_check_delay = 0\n"
        )
        user = SYSTEM_USER_WHEN_ROOT if os.geteuid() == 0 else None
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (self.directory, *self.directory.iterdir()):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self.process = subprocess.Popen(
            [exe, str(self.directory / "pgbouncer.ini")], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, user=user, cwd="/",
        )
        if not listening(self.process, self.port, 15):
            why = self.log_tail()  # before stop() removes the folder with the log
            self.stop()
            raise RuntimeError(f"pgbouncer did not start:\n{why}")

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = (self.directory / "pgbouncer.log").read_text(errors="replace") if self.directory else ""
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        terminate(self.process)
        self.process = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def dsn(self, database: str, user: str = "postgres") -> str:
        return f"postgresql://{quote(user)}@127.0.0.1:{self.port}/{quote(database)}"

    def __enter__(self) -> PgBouncer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
