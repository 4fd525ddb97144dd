"""The HTTP API that Firecracker and Cloud Hypervisor serve on a Unix socket, as a client.

Both VMMs take JSON bodies and answer 2xx with an empty or JSON body, or 4xx/5xx with the
reason: Firecracker's {"fault_message": ...}, Cloud Hypervisor's text. A refusal raises
ApiRefused with the VMM's own words, which become the run's reason. Inside an L1 machine
the socket is there, and the host reaches it through a TCP port that the L1 machine
forwards to socat beside the VMM (Api.address is then (host, port))."""

from __future__ import annotations

import http.client
import json
import socket
import time
from pathlib import Path
from typing import Any

from guestbench.environments.base import GuestStartError
from guestbench.process import proc

CALL_S = 30.0      # one request's limit (a snapshot of a large guest under TCG takes longer:
SLOW_CALL_S = 300.0  # its calls pass their own)
READY_S = 30.0     # from the VMM's start to its API answering (inside an L1 machine too)


class ApiRefused(GuestStartError):
    """The VMM answered a request with an error status: it refused what the plan asked (a
    run that failed, with the VMM's words), not a fault of the host."""

    status = "failed"

    def __init__(self, vmm: str, method: str, path: str, status: int, said: str) -> None:
        self.http_status, self.said = status, said
        super().__init__(f"{vmm} refused {method} {path}: {status} {said}".rstrip())


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def said_of(body: bytes) -> str:
    """The reason in an error reply: Firecracker's fault_message, a JSON error's text, or
    the body as it is (one line, cut to 300 characters)."""
    text = body.decode(errors="replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        for key in ("fault_message", "error", "message"):
            if isinstance(parsed.get(key), str):
                text = parsed[key]
                break
    return " ".join(text.split())[:300]


# A kept connection that the VMM had closed: a GET is sent again on a new one (a PUT may
# have been carried out before the connection went: it is not repeated)
_CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class Api:
    """Requests to one VMM's API, at a Unix socket's path or a (host, port) forwarded to it.

    One connection is kept from one request to the next (HTTP/1.1's default, which both
    VMMs serve), as a client such as curl in a loop or the VMMs' own SDKs does: inside an
    L1 machine each new connection costs a forwarder's process (13 ms more a request
    there). close() ends it."""

    def __init__(self, vmm: str, address: Path | tuple[str, int]) -> None:
        self.vmm, self.address = vmm, address
        self.log: Path | None = None  # each request, its answer's status and ms (a run's api.log)
        self._kept: http.client.HTTPConnection | None = None

    def _connection(self, timeout_s: float) -> http.client.HTTPConnection:
        if isinstance(self.address, tuple):
            return http.client.HTTPConnection(*self.address, timeout=timeout_s)
        return _UnixConnection(str(self.address), timeout_s)

    def close(self) -> None:
        """Ends the kept connection, if there is one."""
        if self._kept is not None:
            self._kept.close()
            self._kept = None

    def call(self, method: str, path: str, body: dict[str, Any] | None = None,
             timeout_s: float = CALL_S) -> Any:
        """One request; its JSON answer (None if empty). ApiRefused on an error status,
        GuestStartError if the VMM did not answer."""
        began_ns = proc.now_ns()
        connection, reused = self._kept, self._kept is not None
        self._kept = None
        if connection is None:
            connection = self._connection(timeout_s)
        else:
            connection.timeout = timeout_s
            if connection.sock is not None:
                connection.sock.settimeout(timeout_s)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
            reply = connection.getresponse()
            answer = reply.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            if reused and method == "GET" and isinstance(error, _CLOSED):
                return self.call(method, path, body, timeout_s)
            raise GuestStartError(f"{self.vmm}'s API did not answer {method} {path}: "
                                  f"{type(error).__name__}: {error}") from None
        self._kept = connection  # closed already if the VMM said it would close it
        if self.log is not None:
            with self.log.open("a") as log:
                log.write(f"{method} {path} {data.decode() if data else ''} -> {reply.status} "
                          f"in {(proc.now_ns() - began_ns) / 1e6:.1f} ms\n")
        if reply.status >= 300:
            raise ApiRefused(self.vmm, method, path, reply.status, said_of(answer))
        try:
            return json.loads(answer) if answer.strip() else None
        except ValueError:
            return answer.decode(errors="replace")

    def wait_ready(self, probe: str, alive, patience_s: float = READY_S) -> float:
        """Waits until GET probe answers (the VMM's API is up); ms it took. alive() False:
        the VMM ended first (GuestStartError)."""
        began_ns = proc.now_ns()
        deadline = began_ns + int(patience_s * 1e9)
        last = "no answer"
        while True:
            if not alive():
                raise GuestStartError(f"{self.vmm} ended before its API answered")
            try:
                self.call("GET", probe, timeout_s=2.0)
                return (proc.now_ns() - began_ns) / 1e6
            except ApiRefused:
                return (proc.now_ns() - began_ns) / 1e6  # it answered
            except GuestStartError as error:
                last = str(error)
            if proc.now_ns() > deadline:
                raise GuestStartError(f"{self.vmm}'s API did not answer within "
                                      f"{patience_s:g} s ({last})")
            time.sleep(0.005)
