"""A guest's virtio-vsock device and the peer its agent talks to (vsock_rr).

The guest's agent connects to the host, CID 2, port PORT; the VMM hands the connection on:

- Firecracker and Cloud Hypervisor (their "hybrid" vsock, a Unix socket UDS on the host):
  to the Unix socket UDS_PORT, where the peer listens (gbagent --listen-unix);
- QEMU's vhost-vsock: to the host kernel's vsock, where the peer listens on PORT
  (gbagent --listen-vsock).

The peer is the agent's own net_peer, which echoes round trips exactly as net_rr's does over
TCP. It runs beside the VMM, started by the same shell (beside()), so that inside an L1
machine it runs there, where the VMM's socket is; it is ended with the VMM.
docs/workloads-network.md, "vsock_rr"."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

GUEST_CID = 3  # the guest's CID where one guest has the device at a time (inside a VM)
PORT = 5000
# the guest's drivers: the vsock core, the virtio transport; and the bus's (the kind's)
MODULES = ("vsock", "vmw_vsock_virtio_transport_common", "vmw_vsock_virtio_transport")


def host_cid() -> int:
    """A guest CID for a vhost-vsock guest on the host, where other guests may hold some:
    3 upwards, from this process's id (a clash is the VMM's clear error)."""
    return 3 + (os.getpid() * 7919) % (2 ** 31 - 4)


def unix_peer(agent: Path, socket: Path, port: int) -> list[str]:
    """The peer on a hybrid vsock's Unix socket for port `port`."""
    return [str(agent), "--listen-unix", f"{socket}_{port}", "net_peer"]


def vsock_peer(agent: Path, port: int) -> list[str]:
    """The peer on the host kernel's vsock, port `port` (vhost-vsock)."""
    return [str(agent), "--listen-vsock", str(port), "net_peer"]


def beside(argv: list[str], programs: list[list[str]], log: Path,
           leftovers: list[str] = ()) -> list[str]:
    """argv run by a shell that first starts programs in the background (their output to
    log) and ends them when argv ends, with argv's status, then removes leftovers (sockets
    outside the run's folder). The VMM stays in the foreground with the shell's standard
    input."""
    q = shlex.quote
    starts = "".join(f"{' '.join(q(a) for a in program)} >>{q(str(log))} 2>&1 </dev/null & "
                     f"b{index}=$!; " for index, program in enumerate(programs))
    ends = " ".join(f"$b{index}" for index in range(len(programs)))
    removed = f"rm -f {' '.join(q(path) for path in leftovers)}; " if leftovers else ""
    script = f'{starts}"$@"; status=$?; kill {ends} 2>/dev/null; {removed}exit $status'
    return ["/bin/sh", "-c", script, "sh", *argv]
