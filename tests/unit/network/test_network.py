"""The network workloads' host side without a guest: the paths (real veth pairs, taps and
namespaces where this host lets us make them, removed after), each kind's mapping of a path
(QEMU's NIC arguments, the OCI bundle's namespace, unshare entering it, the command kind's
{tap}), and every new field rejecting nonsense by name."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench import environments
from guestbench.environments.base import Capability, Job
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.network import paths
from guestbench.plan.build import load
from guestbench.plan.errors import PlanError
from guestbench.workloads import CATALOGUE

CAN_MAKE = os.geteuid() == 0 and shutil.which("ip") is not None
NEEDS_ROOT = pytest.mark.skipif(not CAN_MAKE, reason="making veth pairs and taps needs root "
                                                     "and iproute2")


def _exists(*args: str) -> bool:
    return subprocess.run(["ip", *args], capture_output=True).returncode == 0


def test_loopback_and_user_need_nothing_made():
    with ExitStack() as stack:
        loop = paths.make("loopback", stack)
        user = paths.make("user", stack)
    assert (loop.listen, loop.dial, loop.guest_cidr) == ("127.0.0.1", "127.0.0.1", None)
    # slirp: the guest dials 10.0.2.2, which QEMU turns into the host's 127.0.0.1
    assert (user.listen, user.dial, user.guest_cidr) == ("127.0.0.1", "10.0.2.2", "10.0.2.15/24")
    with pytest.raises(paths.PathError, match="unknown network path 'wifi'"):
        paths.make("wifi", ExitStack())


@NEEDS_ROOT
def test_a_veth_path_is_a_namespace_with_one_end_and_goes_with_the_run():
    with ExitStack() as stack:
        path = paths.make("veth", stack)
        assert _exists("link", "show", path.host_if)
        assert Path(path.netns_path).exists()
        inside = subprocess.run(["ip", "-n", path.netns, "-4", "-o", "addr"],
                                capture_output=True, text=True).stdout
        host = ipaddress.ip_address(path.listen)
        assert host in paths.BENCH_NET and str(host + 1) in inside  # the guest's end: .2
    assert not _exists("link", "show", path.host_if)
    assert not Path(path.netns_path).exists()


@NEEDS_ROOT
def test_a_tap_path_gives_the_guest_its_address_and_a_mac():
    with ExitStack() as stack:
        path = paths.make("tap", stack)
        assert _exists("link", "show", path.host_if) and len(path.host_if) <= 15
        guest = ipaddress.ip_interface(path.guest_cidr)
        assert ipaddress.ip_address(path.dial) in guest.network
        assert int(path.mac.split(":")[0], 16) & 2  # locally administered
    assert not _exists("link", "show", path.host_if)


def test_addresses_the_host_uses_are_skipped(monkeypatch):
    taken = ipaddress.ip_network("198.18.0.0/16")  # half the benchmarking range
    monkeypatch.setattr(paths, "_ip", lambda *args: f"2: eth0 inet {taken} scope global\n"
                        if "addr" in args else "")
    host, guest, prefix = paths._free_pair()
    assert host not in taken and host in paths.BENCH_NET and prefix == 30


def test_qemu_maps_user_and_tap_to_its_nic_on_each_machine():
    def qemu(**options):
        return environments.create(environments.spec_model("qemu")(
            name="q", kind="qemu", **options))
    user = paths.NetPath("user", "127.0.0.1", "10.0.2.2", "10.0.2.15/24", mac="02:67:62:00:00:01")
    tap = paths.NetPath("tap", "198.18.0.1", "198.18.0.1", "198.18.0.2/30", host_if="gb1n0",
                        mac="02:67:62:00:00:02")
    assert qemu().network_path() == "user"
    assert qemu().attach_network(user) == [
        "-netdev", "user,id=gbnet", "-device", "virtio-net-device,netdev=gbnet,mac=02:67:62:00:00:01"]
    assert qemu(machine="pc", net="tap").attach_network(tap) == [
        "-netdev", "tap,id=gbnet,ifname=gb1n0,script=no,downscript=no,vhost=off",
        "-device", "virtio-net-pci,netdev=gbnet,mac=02:67:62:00:00:02"]


def test_vhost_where_the_host_has_none_is_refused_with_the_reason(monkeypatch, tmp_path):
    from guestbench.environments.kinds import qemu as qemu_kind
    monkeypatch.setattr(qemu_kind, "VHOST_NET", tmp_path / "vhost-net")
    environment = environments.create(environments.spec_model("qemu")(
        name="q", kind="qemu", net="tap", vhost=True))
    assert "vhost-net" in environment.network_refusal()
    (tmp_path / "vhost-net").touch()
    assert environment.network_refusal() is None


def test_uml_gets_a_vector_device_on_the_tap():
    uml = environments.create(environments.spec_model("uml")(name="u", kind="uml"))
    tap = paths.NetPath("tap", "198.18.0.1", "198.18.0.1", "198.18.0.2/30", host_if="gb1n0",
                        mac="02:67:62:00:00:02")
    assert uml.network_path() == "tap"
    assert uml.attach_network(tap) == ["vec0:transport=tap,ifname=gb1n0,mac=02:67:62:00:00:02,gro=1"]


def test_containers_join_the_run_namespace(tmp_path):
    from guestbench.environments.kinds import oci
    path = paths.NetPath("veth", "198.18.0.1", "198.18.0.1", netns="guestbench-1-0",
                         host_if="gb1n0")
    bundle = oci._Bundle(Path("/bin/true"), ["net_rr"], netns=path.netns_path)
    try:
        spaces = json.loads((bundle.directory / "config.json").read_text())["linux"]["namespaces"]
    finally:
        bundle.remove()
    assert {"type": "network", "path": "/run/netns/guestbench-1-0"} in spaces
    runsc = environments.create(environments.spec_model("oci")(name="s", kind="oci",
                                                               runtime="runsc"))
    job = Job("net_rr", Path("/bin/true"), (), network=path)
    assert runsc.network_path() == "veth" and runsc._network(job) == "sandbox"
    assert runsc._network(Job("getpid", Path("/bin/true"), ())) == "none"
    host = environments.create(environments.spec_model("oci")(name="h", kind="oci",
                                                              runtime="runsc", network="host"))
    assert host.network_path() == "loopback"
    none = environments.create(environments.spec_model("oci")(name="n", kind="oci",
                                                              runtime="runsc", network="none"))
    assert "network = \"none\"" in none.network_refusal()


def test_a_namespace_enters_the_run_namespace_instead_of_making_one(tmp_path):
    space = environments.create(environments.spec_model("namespace")(name="ns",
                                                                     kind="namespace"))
    assert space.network_path() == "veth"
    assert "--net" not in space._prefix(new_net=False) and "--net" in space._prefix()
    shared = environments.create(environments.spec_model("namespace")(
        name="ns", kind="namespace", namespaces=["pid", "mount"]))
    assert shared.network_path() == "loopback"


def _command(**options):
    return environments.create(environments.spec_model("command")(name="vm", kind="command", **{
        "argv": ["vmm", "{kernel}", "{initrd}", "{cmdline}"], **options}))


def test_the_command_kind_takes_its_nic_from_net_argv(tmp_path):
    from guestbench import images
    without = _command()
    assert Capability.NETWORK not in without.provides()
    assert "net_argv" in without.refusal(frozenset({Capability.NETWORK}))
    nic = _command(net_argv=["--net", "tap={tap},mac={mac}"])
    assert Capability.NETWORK in nic.provides() and nic.network_path() == "tap"
    tap = paths.NetPath("tap", "198.18.0.1", "198.18.0.1", "198.18.0.2/30", host_if="gb1n0",
                        mac="02:67:62:00:00:02")
    devices = GuestDevices(args=nic.attach_network(tap))
    nic.image = images.Image("abc", Path("/k/bz"), "6.1", Path("/c/i.cpio"), (), (), None)
    assert nic.command_line([], tmp_path, devices)[-2:] == [
        "--net", "tap=gb1n0,mac=02:67:62:00:00:02"]


@pytest.mark.parametrize("lines, field, words", [
    ('kind = "command"\nargv = ["vmm", "{initrd}", "{cmdline}", "--net", "{tap}"]\n',
     "environment[0]", "{tap} and {mac} belong in net_argv"),
    ('kind = "command"\nargv = ["vmm", "{initrd}", "{cmdline}"]\nnet_argv = ["--net"]\n',
     "environment[0]", "net_argv does not pass {tap}"),
    ('kind = "qemu"\nnet = "bridge"\n', "environment[0].net", ""),
    ('kind = "qemu"\nvhost = true\n', "environment[0]", "vhost needs net = \"tap\""),
    ('kind = "qemu"\nnet = "tap"\nvhost = "yes"\n', "environment[0].vhost", ""),
    ('kind = "oci"\nruntime = "runsc"\nnetwork = "bridge"\n', "environment[0].network", ""),
    ('kind = "oci"\nruntime = "runc"\nnetwork = "sandbox"\n', "environment[0]",
     "network is a runsc option"),
])
def test_bad_network_settings_are_plan_errors_naming_the_field(lines, field, words, write_plan,
                                                               host):
    with pytest.raises(PlanError) as caught:
        load(write_plan(f'[[environment]]\nname = "e"\n{lines}[[workload]]\nname = "net_rr"\n'),
             host)
    message = str(caught.value)
    assert f"{field}:" in message and "(fix:" in message, message
    assert words in message, message


@pytest.mark.parametrize("name, given", [
    ("net_rr", {"min_time_s": 0}), ("net_rr", {"values": 0}), ("net_rr", {"values": "3"}),
    ("net_stream", {"min_time_s": 0.01}), ("net_stream", {"bytes": 3}),
    ("net_rr", {"agent_cpu": -1}), ("net_stream", {"agent_cpu": 4096}),
    ("net_stream", {"peer_cpu": "1"}), ("net_rr", {"peer_cpu": True}),
    ("net_stream", {"congestion": "Cubic"}), ("net_rr", {"congestion": ""}),
    ("net_stream", {"congestion": "a" * 16}), ("net_stream", {"congestion": "bbr;rm"}),
])
def test_network_workloads_reject_nonsense_naming_the_field(name, given, host):
    with pytest.raises(ValidationError) as error:
        CATALOGUE[name].resolve(given, host)
    assert next(iter(given)) in str(error.value)


def test_network_workloads_run_alone_and_say_what_they_report(host):
    from guestbench.runner.batching import part_of
    from guestbench.environments.base import JobNeeds
    from guestbench.plan.schema import WorkloadCase
    for name, metric in (("net_rr", "rr_p50"), ("net_stream", "to_guest")):
        workload = CATALOGUE[name]
        params = workload.resolve({}, host)
        assert workload.host_part == "network" and workload.primary_metric == metric
        assert part_of(WorkloadCase(name, params, name), JobNeeds()) is None
        assert workload.agent_args(params)[-1] == name


def test_the_agent_s_cpu_goes_to_the_agent_and_the_peer_s_stays_on_the_host(host):
    for name in ("net_rr", "net_stream"):
        workload = CATALOGUE[name]
        plain = workload.agent_args(workload.resolve({}, host))
        assert "--cpu" not in plain and "--congestion" not in plain, plain
        args = workload.agent_args(workload.resolve(
            {"agent_cpu": 3, "peer_cpu": 1, "congestion": "cubic"}, host))
        assert args[args.index("--cpu") + 1] == "3" and "1" not in args, args
        assert args[args.index("--congestion") + 1] == "cubic", args


def test_a_congestion_control_the_host_lacks_is_refused_with_what_it_offers(monkeypatch,
                                                                            tmp_path):
    from guestbench.network import peer
    offered = tmp_path / "tcp_available_congestion_control"
    offered.write_text("reno cubic\n")
    monkeypatch.setattr(peer, "OFFERED", offered)
    assert peer.congestion_refusal(None) is None
    assert peer.congestion_refusal("cubic") is None
    said = peer.congestion_refusal("bbr")
    assert said.startswith("congestion bbr: this host's kernel offers reno cubic"), said
    assert "modprobe tcp_bbr" in said
    offered.unlink()
    assert "cannot read" in peer.congestion_refusal("cubic")


def test_cpu_ranges_are_written_short():
    from guestbench.network.peer import cpu_ranges
    assert cpu_ranges({0}) == "0"
    assert cpu_ranges({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"


def test_a_guest_job_keeps_its_mounts_and_its_network_path():
    from guestbench.environments.base import JobNeeds
    from guestbench.environments.fullsystem.console import guest_job, kernel_arguments
    path = paths.NetPath("user", "127.0.0.1", "10.0.2.2", "10.0.2.15/24", mac="02:67:62:00:00:01")
    job = guest_job(Job("net_rr", Path("/a"), ("net_rr",), JobNeeds(scratch=True), network=path),
                    JobNeeds(scratch=True), mounts=["gb.mount=ext4:/dev/vda:/scratch:"])
    assert job.network == path
    assert kernel_arguments(job)[0] == "gb.mount=ext4:/dev/vda:/scratch:"


@pytest.mark.parametrize("line, words", [
    ('congestion = "Cubic"', "'Cubic' is not a congestion control's name"),
    ('agent_cpu = -1', "greater than or equal to 0"),
    ('peer_cpu = "1"', "valid integer"),
])
def test_bad_ends_are_plan_errors_naming_the_field_with_their_own_fix(line, words, write_plan,
                                                                       host):
    field = line.split(" =")[0]
    with pytest.raises(PlanError) as caught:
        load(write_plan(f'[[environment]]\nname = "e"\nkind = "native"\n'
                        f'[[workload]]\nname = "net_stream"\n{line}\n'), host)
    message = str(caught.value)
    assert f"workload[0].{field}:" in message and words in message, message
    assert "plain identifier" not in message and "(fix:" in message, message


def test_a_pattern_other_than_an_identifier_is_not_told_to_be_one(write_plan, host):
    with pytest.raises(PlanError) as caught:
        load(write_plan('[[environment]]\nname = "c"\nkind = "command"\ndisk_device = "vda"\n'
                        'argv = ["x", "{initrd}", "{cmdline}"]\n[[workload]]\nname = "getpid"\n'),
             host)
    message = str(caught.value)
    assert "environment[0].disk_device:" in message and "plain identifier" not in message, message
    assert "write it in the form ^/dev/" in message, message
