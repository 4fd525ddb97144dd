"""The API client of Firecracker and Cloud Hypervisor (fullsystem/vmm_api.py): one connection
kept from one request to the next, a new one where the VMM closed it, and a request that
may have been carried out never sent twice."""

from __future__ import annotations

import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from guestbench.environments.base import GuestStartError
from guestbench.environments.fullsystem.vmm_api import Api


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, close_after: set[str]) -> None:
        self.connections = 0
        self.requests: list[str] = []
        self.close_after = close_after  # "METHOD PATH": the connection is dropped after it
        super().__init__(path, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def log_message(self, *args) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        key = f"{self.command} {self.path}"
        self.server.requests.append(key)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if key in self.server.close_after:  # without saying so: as a VMM that went away
            self.close_connection = True

    do_GET = do_PUT = _serve


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(close_after: set[str] = frozenset()) -> tuple[_Server, Path]:
        path = tmp_path / f"api{len(servers)}.sock"
        server = _Server(str(path), set(close_after))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server, path

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_one_connection_serves_every_request_until_close(serve) -> None:
    server, path = serve()
    api = Api("Cloud Hypervisor", path)
    api.call("GET", "/api/v1/vmm.ping")
    api.call("PUT", "/api/v1/vm.restore", {"source_url": "file:///x"})
    api.call("PUT", "/api/v1/vm.resume")
    assert server.requests == ["GET /api/v1/vmm.ping", "PUT /api/v1/vm.restore",
                               "PUT /api/v1/vm.resume"]
    assert server.connections == 1
    api.close()
    api.call("GET", "/api/v1/vmm.ping")
    assert server.connections == 2


def test_a_get_on_a_connection_the_vmm_closed_goes_again_on_a_new_one(serve) -> None:
    server, path = serve(close_after={"GET /a"})
    api = Api("Firecracker", path)
    api.call("GET", "/a")
    api.call("GET", "/b")
    assert server.requests == ["GET /a", "GET /b"]
    assert server.connections == 2


def test_a_put_on_a_connection_the_vmm_closed_is_not_sent_again(serve) -> None:
    """The client cannot tell whether the VMM carried it out before the connection went:
    the run fails, saying so, rather than risk loading a snapshot twice."""
    server, path = serve(close_after={"GET /a"})
    api = Api("Firecracker", path)
    api.call("GET", "/a")
    with pytest.raises(GuestStartError, match="Firecracker's API did not answer PUT /load"):
        api.call("PUT", "/load", {})
    assert server.requests == ["GET /a"]
    assert server.connections == 1
