"""The drain's listener filter (gateway.serving.server.refuse_new_connections): no new handshake completes,
while connections already queued or open keep working, on a real listening socket."""

from __future__ import annotations

import socket
import sys

import pytest

from gateway.serving.server import refuse_new_connections

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="socket filters are Linux's")


def test_new_connections_get_no_handshake_and_the_queued_ones_still_work() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        open_client = socket.create_connection(("127.0.0.1", port), timeout=5)
        open_server, _ = listener.accept()
        queued_client = socket.create_connection(("127.0.0.1", port), timeout=5)  # not accepted yet
        assert refuse_new_connections(listener) is True
        with pytest.raises(TimeoutError):  # its SYN is dropped: no answer, no handshake
            socket.create_connection(("127.0.0.1", port), timeout=1)
        queued_server, _ = listener.accept()
        with open_client, open_server, queued_client, queued_server:
            queued_client.sendall(b"queued")
            assert queued_server.recv(16) == b"queued"
            queued_server.sendall(b"answer")
            assert queued_client.recv(16) == b"answer"
            open_client.sendall(b"open")
            assert open_server.recv(16) == b"open"
