"""The agent's peer on the host: `gbagent --listen ADDR net_peer`, the other end of every
network workload's connections (it echoes round trips, takes and sends streams). Started
for one run, in its own process group, and ended by it (the reaper ends it if guestbench
is killed)."""

from __future__ import annotations

import re
from contextlib import ExitStack
from pathlib import Path

from guestbench import proc

READY_TIMEOUT_S = 5
LISTENING = re.compile(rb"gbagent-peer listening (\S+):(\d+)")


class PeerError(Exception):
    """The peer did not start listening (the run is then infra, with this reason)."""


def start(agent_path: Path, listen: str, logdir: Path, stack: ExitStack) -> int:
    """Starts the peer listening on `listen`; returns its port. Its end is pushed on `stack`."""
    logdir.mkdir(parents=True, exist_ok=True)
    try:
        peer = proc.Process([str(agent_path), "--listen", listen, "net_peer"],
                            logdir / "peer.stdout", logdir / "peer.stderr")
    except proc.ProcessError as error:
        raise PeerError(f"the host's peer: {error}") from None
    stack.callback(peer.kill)
    try:
        for _, line in peer.lines(proc.now_ns() + int(READY_TIMEOUT_S * 1e9)):
            said = LISTENING.search(line)
            if said:
                return int(said.group(2))
    except proc.DeadlineExceeded:
        raise PeerError(f"the host's peer did not listen on {listen} within "
                        f"{READY_TIMEOUT_S} s (its log: {logdir / 'peer.stderr'})") from None
    peer.kill()
    said = (logdir / "peer.stderr").read_text(errors="replace").strip().splitlines()
    raise PeerError(f"the host's peer exited before it listened on {listen}"
                    + (f": {said[-1]}" if said else ""))
