"""A stand-in for Firecracker or Cloud Hypervisor that serves their HTTP API on the socket
its command line names, and nothing else: no KVM, no guest.

    python fake_vmm.py --api-sock PATH            (Firecracker's flag)
    python fake_vmm.py --api-socket path=PATH ... (Cloud Hypervisor's)
    python fake_vmm.py --version

Each request is appended to $FAKE_VMM_LOG as a JSON line {"method", "path", "body"}; the
answer is $FAKE_VMM_REPLIES's entry for "METHOD PATH" ([status, body]) where there is
one, else 204 with no body (200 with {} for a GET). After $FAKE_VMM_PRINT_AFTER's request
("METHOD PATH") it prints $FAKE_VMM_PRINT on its stdout, as a console would, and exits."""

from __future__ import annotations

import json
import os
import socketserver
import sys
from http.server import BaseHTTPRequestHandler


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # a Unix socket has no client address to log
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with open(os.environ["FAKE_VMM_LOG"], "a") as log:
            log.write(json.dumps({"method": self.command, "path": self.path,
                                  "body": json.loads(body) if body else None}) + "\n")
        key = f"{self.command} {self.path}"
        replies = json.loads(os.environ.get("FAKE_VMM_REPLIES") or "{}")
        status, answer = replies.get(key, (200, {}) if self.command == "GET" else (204, None))
        data = b"" if answer is None else (answer.encode() if isinstance(answer, str)
                                           else json.dumps(answer).encode())
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        if data:
            self.send_header("Content-Type", "application/json")
        self.end_headers()  # flushes the headers; the client may close once it has them
        if data:
            self.wfile.write(data)
        if key == os.environ.get("FAKE_VMM_PRINT_AFTER"):
            print(os.environ.get("FAKE_VMM_PRINT", ""), flush=True)
            os._exit(0)  # as a VMM whose guest powered off

    do_GET = do_PUT = do_PATCH = _serve


def socket_path(argv: list[str]) -> str:
    for flag in ("--api-sock", "--api-socket"):
        if flag in argv:
            value = argv[argv.index(flag) + 1]
            return value.split("path=", 1)[1] if value.startswith("path=") else value
    sys.exit("fake_vmm: no --api-sock or --api-socket")


def main() -> None:
    if "--version" in sys.argv:
        print("fake-vmm v0.0.1")
        return
    with open(os.environ["FAKE_VMM_LOG"], "a") as log:
        log.write(json.dumps({"argv": sys.argv[1:]}) + "\n")
    server = socketserver.UnixStreamServer(socket_path(sys.argv), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
