"""Is the listen address free? Asked before anything prints that it serves there."""

from __future__ import annotations

import socket

from gateway.settings import ConfigError


def ensure_port_free(host: str, port: int) -> None:
    """Raise :class:`ConfigError` when ``host:port`` cannot be listened on (another server holds it).

    uvicorn binds later; a port taken in between still fails there, but the usual case (a server left
    running) is reported before a banner claims the gateway is serving.
    """
    if port == 0:  # the kernel picks a free one
        return
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is no conflict
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (is another server running "
                              "there? stop it or choose another port with --port)") from exc
