"""The paths a network workload's traffic takes between the host's peer and an instance.

    loopback  the instance shares the host's network stack (native, qemu-user, runsc with
              network = "host"): the peer listens on 127.0.0.1
    veth      a network namespace made for the run, with one end of a veth pair in it
              (namespace, runc, crun, runsc: gVisor's netstack then owns that end)
    tap       a tap device the VMM opens (QEMU, UML, the command kind); the guest's agent
              gives its NIC the guest's address itself
    user      QEMU's user-mode network (slirp): the guest reaches the host's 127.0.0.1 as
              10.0.2.2, through QEMU's own TCP/IP stack

Addresses come from 198.18.0.0/15, the range set aside for benchmarking networks (RFC 2544):
one /30 per path, host .1 and guest .2, skipping any the host already uses. What is made is
told to the reaper before it exists (`ip link del`, `ip netns del`), so it goes even if
guestbench is killed."""

from __future__ import annotations

import ipaddress
import itertools
import os
from contextlib import ExitStack
from dataclasses import dataclass

from guestbench.process import proc, reaper

IP_TIMEOUT_S = 10
BENCH_NET = ipaddress.ip_network("198.18.0.0/15")
USER_GUEST = "10.0.2.15/24"  # slirp's defaults
USER_HOST = "10.0.2.2"
PATHS = ("loopback", "veth", "tap", "user")
_counter = itertools.count()


class PathError(Exception):
    """The path could not be made here (the run is then unsupported, with this reason)."""


@dataclass(frozen=True)
class NetPath:
    """A path made for one run, and what each side needs to know of it."""

    kind: str                   # one of PATHS
    listen: str                 # the address the host's peer listens on
    dial: str                   # the address the instance's agent connects to
    guest_cidr: str | None = None   # the address the guest's agent gives its NIC (tap, user)
    netns: str | None = None        # veth: the namespace's name (/run/netns/NAME)
    host_if: str | None = None      # veth: the host's end; tap: the tap device
    mac: str | None = None          # tap, user: the guest NIC's MAC

    @property
    def netns_path(self) -> str | None:
        return f"/run/netns/{self.netns}" if self.netns else None

    def facts(self) -> dict[str, str]:
        """What a run's log keeps of its path."""
        return {key: value for key, value in (
            ("path", self.kind), ("peer", self.dial), ("guest", self.guest_cidr),
            ("netns", self.netns), ("host_if", self.host_if), ("mac", self.mac)) if value}


def make(kind: str, stack: ExitStack) -> NetPath:
    """The path of that kind, made; its removal pushed on `stack`. PathError if it cannot be."""
    if kind == "loopback":
        return NetPath("loopback", "127.0.0.1", "127.0.0.1")
    if kind == "user":
        return NetPath("user", "127.0.0.1", USER_HOST, guest_cidr=USER_GUEST, mac=_mac(0))
    if kind not in ("veth", "tap"):
        raise PathError(f"unknown network path {kind!r} (one of {', '.join(PATHS)})")
    if os.geteuid() != 0:
        raise PathError(f"a {kind} path needs root (CAP_NET_ADMIN) to create network devices")
    number = next(_counter)
    tag = f"gb{os.getpid() % 100000}n{number}"  # an interface name has at most 15 bytes
    host, guest, prefix = _free_pair()
    if kind == "tap":
        _made(stack, ["ip", "link", "del", tag],
              ["ip", "tuntap", "add", "dev", tag, "mode", "tap"])
        _ip("addr", "add", f"{host}/{prefix}", "dev", tag)
        _ip("link", "set", tag, "up")
        return NetPath("tap", str(host), str(host), guest_cidr=f"{guest}/{prefix}",
                       host_if=tag, mac=_mac(number))
    netns, inside = f"guestbench-{os.getpid()}-{number}", f"{tag}g"
    _made(stack, ["ip", "netns", "del", netns], ["ip", "netns", "add", netns])
    _made(stack, ["ip", "link", "del", tag],
          ["ip", "link", "add", tag, "type", "veth", "peer", "name", inside])
    _ip("link", "set", inside, "netns", netns)
    _ip("addr", "add", f"{host}/{prefix}", "dev", tag)
    _ip("link", "set", tag, "up")
    _ip("-n", netns, "addr", "add", f"{guest}/{prefix}", "dev", inside)
    _ip("-n", netns, "link", "set", inside, "up")
    _ip("-n", netns, "link", "set", "lo", "up")
    return NetPath("veth", str(host), str(host), netns=netns, host_if=tag)


def _made(stack: ExitStack, undo: list[str], do: list[str]) -> None:
    """Runs `do` with `undo` told to the reaper first and pushed on the stack."""
    reaper.KEEPER.command(undo)
    stack.callback(_undo, undo)
    _ip(*do[1:])


def _undo(argv: list[str]) -> None:
    try:
        proc.run(argv, timeout_s=IP_TIMEOUT_S)
    except (proc.ProcessError, proc.DeadlineExceeded):
        pass  # the reaper runs it again when guestbench ends
    else:
        reaper.KEEPER.command_done(argv)


def _ip(*args: str) -> str:
    try:
        result = proc.run(["ip", *args], timeout_s=IP_TIMEOUT_S)
    except proc.ProcessError as error:
        raise PathError(f"{error} (apt-get install iproute2)") from None
    except proc.DeadlineExceeded:
        raise PathError(f"ip {' '.join(args)} did not finish within {IP_TIMEOUT_S} s") from None
    if result.returncode != 0:
        raise PathError(f"ip {' '.join(args)}: {result.said(500)}")
    return result.stdout


def _free_pair() -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address, int]:
    """A /30 of the benchmarking range that no address or route of the host overlaps."""
    used = [ipaddress.ip_network(word, strict=False)
            for line in (_ip("-4", "-o", "addr", "show") + _ip("-4", "route", "show",
                                                             "table", "all")).splitlines()
            for word in line.split() if "/" in word and word[0].isdigit()]
    subnets = list(BENCH_NET.subnets(new_prefix=30))
    start = (os.getpid() * 64 + next(_counter)) % len(subnets)
    for subnet in itertools.chain(subnets[start:], subnets[:start]):
        if not any(subnet.overlaps(network) for network in used):
            first, second = list(subnet.hosts())
            return first, second, 30
    raise PathError(f"every /30 of {BENCH_NET} is in use on this host")


def _mac(number: int) -> str:
    """A locally administered unicast MAC, distinct per path of this process."""
    value = (os.getpid() % 65536) << 8 | number % 256
    return "02:67:62:" + ":".join(f"{(value >> shift) & 0xff:02x}" for shift in (16, 8, 0))
