"""The agent's peer on the host: `gbagent --listen ADDR net_peer`, the other end of every
network workload's connections (it echoes round trips, takes and sends streams). Started
for one run, in its own process group, and ended by it (the reaper ends it if guestbench
is killed)."""

from __future__ import annotations

import os
import re
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

from guestbench.process import proc

READY_TIMEOUT_S = 5
LISTENING = re.compile(rb"gbagent-peer listening (\S+):(\d+)")


class Listening(NamedTuple):
    port: int
    cpus: str  # the host CPUs the peer may run on, read back from the kernel: "1", "0-3"


class PeerError(Exception):
    """The peer did not start listening (the run is then infra, with this reason)."""


def cpu_ranges(cpus: set[int]) -> str:
    """{0, 1, 2, 5} -> "0-2,5"."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{low}-{high}" if high > low else f"{low}" for low, high in ranges)


OFFERED = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def congestion_refusal(name: str | None) -> str | None:
    """Why this host's kernel cannot give the peer's connections that congestion control."""
    if name is None:
        return None
    try:
        offered = OFFERED.read_text().split()
    except OSError as error:
        return f"congestion {name}: cannot read {OFFERED}: {error.strerror}"
    if name in offered:
        return None
    return (f"congestion {name}: this host's kernel offers {' '.join(offered)} ({OFFERED}; "
            f"root can load another with modprobe tcp_{name})")


def start(agent_path: Path, listen: str, logdir: Path, stack: ExitStack,
          cpu: int | None = None, congestion: str | None = None) -> Listening:
    """Starts the peer listening on `listen`, on host CPU `cpu` if one is given (set before
    any connection, so every connection's process, forked from it, stays there). Its end is
    pushed on `stack`."""
    logdir.mkdir(parents=True, exist_ok=True)
    try:
        extra = [] if congestion is None else ["--congestion", congestion]
        peer = proc.Process([str(agent_path), "--listen", listen, *extra, "net_peer"],
                            logdir / "peer.stdout", logdir / "peer.stderr")
    except proc.ProcessError as error:
        raise PeerError(f"the host's peer: {error}") from None
    stack.callback(peer.kill)
    if cpu is not None:
        try:
            os.sched_setaffinity(peer.pid, {cpu})
            cpus = cpu_ranges(os.sched_getaffinity(peer.pid))
        except OSError as error:
            raise PeerError(f"the host's peer: pinning it to CPU {cpu}: {error.strerror}") from None
    else:
        cpus = cpu_ranges(os.sched_getaffinity(0))  # the peer's: inherited
    try:
        for _, line in peer.lines(proc.now_ns() + int(READY_TIMEOUT_S * 1e9)):
            said = LISTENING.search(line)
            if said:
                return Listening(int(said.group(2)), cpus)
    except proc.DeadlineExceeded:
        raise PeerError(f"the host's peer did not listen on {listen} within "
                        f"{READY_TIMEOUT_S} s (its log: {logdir / 'peer.stderr'})") from None
    peer.kill()
    said = (logdir / "peer.stderr").read_text(errors="replace").strip().splitlines()
    raise PeerError(f"the host's peer exited before it listened on {listen}"
                    + (f": {said[-1]}" if said else ""))
