"""The QMP client's one command per session: a socket that exists before QEMU listens on it
(its bind comes first) is tried again for a moment, not failed; a socket nobody will ever
listen on fails within that moment, with the reason."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from guestbench.environments.base import GuestStartError
from guestbench.environments.fullsystem import qmp


def bound(path) -> socket.socket:
    """A Unix socket whose file exists, not yet listening: connections are refused."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    return server


def send(peer: socket.socket, message: dict) -> None:
    peer.sendall(json.dumps(message).encode() + b"\n")


def serve_one_command(server: socket.socket, after_s: float) -> threading.Thread:
    """Listens after after_s, then speaks QMP for one session: greeting, capabilities, one
    command answered with {"return": {"answered": NAME}}."""
    def run() -> None:
        time.sleep(after_s)
        server.listen(1)
        peer, _ = server.accept()
        with peer:
            send(peer, {"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 0},
                                            "package": ""}, "capabilities": []}})
            pending = ""
            for _ in range(2):  # qmp_capabilities, then the command (no newline between)
                while True:
                    try:
                        asked, end = json.JSONDecoder().raw_decode(pending.lstrip())
                        pending = pending.lstrip()[end:]
                        break
                    except ValueError:
                        pending += peer.recv(4096).decode()
                answer = ({} if asked["execute"] == "qmp_capabilities"
                          else {"answered": asked["execute"]})
                send(peer, {"return": answer, **({"id": asked["id"]} if "id" in asked else {})})
            while peer.recv(4096):  # as QEMU does, it keeps the session until the client ends it
                pass
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_socket_that_listens_a_moment_later_is_waited_for(tmp_path) -> None:
    path = tmp_path / "qmp.sock"
    server = bound(path)
    try:
        thread = serve_one_command(server, after_s=0.2)
        assert qmp.qmp_execute(path, "query-status") == {"answered": "query-status"}
        thread.join(5)
    finally:
        server.close()


def test_a_socket_nobody_listens_on_fails_with_the_reason(tmp_path) -> None:
    path = tmp_path / "qmp.sock"
    server = bound(path)
    try:
        began = time.monotonic()
        with pytest.raises(GuestStartError, match="QMP query-status"):
            qmp.qmp_execute(path, "query-status")
        assert time.monotonic() - began >= qmp.REFUSED_RETRY_S
    finally:
        server.close()
