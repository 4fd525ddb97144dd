"""The command kind for real: QEMU and UML started from argv templates written here, over
each console kind, placed by thread names; a guest of its own read through its console."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from guestbench import agent, environments
from guestbench.images import vmlinux
from guestbench.process import proc
from guestbench.environments.base import Capability, Job, JobNeeds, PlanNeeds
from guestbench.runner import Status
from guestbench.runner.outcomes import watch

from tests.support.real_environments import prepared, uml_kernel
from tests.support.cli import guestbench
from tests.support.guests import assert_gone, run
from tests.support.cli import ok_runs

pytestmark = pytest.mark.integration

QEMU_PC = ["qemu-system-x86_64", "-M", "pc", "-accel", "tcg", "-m", "{memory_mib}",
           "-smp", "{vcpus}", "-nodefaults", "-no-user-config", "-display", "none",
           "-no-reboot", "-kernel", "{kernel}", "-initrd", "{initrd}", "-append", "{cmdline}"]
SERIAL = {"stdio": ["-serial", "stdio"],
          "file": ["-serial", "file:{console_path}"],
          "unix": ["-serial", "unix:{console_path},server=on,wait=off"],
          "pty": ["-serial", "{console_path}"]}
UML = ["linux.uml", "mem={memory_mib}M", "initrd={initrd}", "uml_dir={workdir}", "umid=gb",
       "con=null", "con0=fd:0,fd:1", "{cmdline}"]


def tcg_args() -> list[str]:
    """What a TCG guest's command line needs to boot reliably here, as the qemu kind gives it:
    the host's TSC rate, so that the guest does not calibrate against the PIT (that fails on
    a loaded host and hangs about one boot in 35; docs/environments.md)."""
    if not _tsc_khz:
        _tsc_khz.append(agent.host_tsc_khz() or 0)
    return [f"tsc_early_khz={_tsc_khz[0]}"] if _tsc_khz[0] else []


_tsc_khz: list[int] = []


def command(host_facts, **options):
    spec = environments.spec_model("command")(name="cmd", kind="command", **options)
    return prepared(host_facts, environments.create(spec))


@pytest.mark.parametrize("console", list(SERIAL))
def test_qemu_from_a_template_over_each_console(console, host_facts, agent_path, tmp_path):
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 not installed (apt-get install qemu-system-x86)")
    env = command(host_facts, argv=[*QEMU_PC, *SERIAL[console]], console=console,
                  kernel_format="bzImage" if console == "stdio" else "vmlinux",
                  kernel_args=["console=ttyS0", *tcg_args()],
                  version_argv=["qemu-system-x86_64", "--version"])
    assert env.facts()["vmm_version"].startswith("QEMU emulator version")
    outcome, guest = run(env, agent_path, tmp_path, ["--min-time", "0.02", "getpid"])
    assert outcome.status == Status.OK, outcome.reason
    phases = guest.boot_phases()
    assert 0 < phases["first_byte"] <= phases["userspace"] <= phases["agent_ready"]
    log = tmp_path / "logs" / ("stdout.log" if console == "stdio" else "console.log")
    assert "agent exited with status 0" in log.read_text(errors="replace")


def test_uml_from_a_template(host_facts, agent_path, tmp_path):
    env = command(host_facts, argv=UML, kernel=uml_kernel(),
                  kernel_args=["console=tty0"], port_io=False)
    outcome, guest = run(env, agent_path, tmp_path, ["--min-time", "0.02", "getpid"])
    assert outcome.status == Status.OK, outcome.reason
    assert "powered_off" in guest.boot_phases()


def test_placement_by_thread_names(host_facts, agent_path, tmp_path):
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 not installed")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("placement disjoint needs 2 host CPUs")
    # QEMU names its threads ("CPU 0/TCG") only when asked to
    env = command(host_facts, argv=[*QEMU_PC, *SERIAL["stdio"], "-name", "gb,debug-threads=on"],
                  kernel_args=["console=ttyS0", *tcg_args()],
                  placement="disjoint", kernel_format="vmlinux",
                  vcpu_threads=r"^CPU (\d+)/")
    outcome, _ = run(env, agent_path, tmp_path, ["--min-time", "0.02", "getpid"])
    assert outcome.status == Status.OK, outcome.reason
    applied = json.loads((tmp_path / "logs" / "placement.json").read_text())
    assert applied["other_threads"]["host_cpu"] != applied["vcpu_threads"]["0"]["host_cpu"]
    assert applied["after_run"]["kept"], applied["after_run"]  # checked as the agent ended


OWN_INIT = """#!/bin/busybox sh
/bin/busybox echo "bench: starting"
/bin/busybox echo "getpid: 1234 cycles"
/bin/busybox echo "sched_yield: 5678 cycles"
/bin/busybox poweroff -f
"""

# a QEMU PC under TCG booting the plan's kernel with an initramfs of its own ({initrd})
OWN_ARGV = """argv = ["qemu-system-x86_64", "-M", "pc", "-accel", "tcg", "-m", "{{memory_mib}}",
        "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio", "-no-reboot",
        "-kernel", "{{kernel}}", "-initrd", "{initrd}", "-append", "{{cmdline}}"]"""

OWN_PLAN = """
[campaign]
name = "own"
repeat = 1
timeout_s = 60

[[environment]]
name = "own"
kind = "command"
image = "none"
kernel = "{kernel}"
kernel_args = ["console=ttyS0", "quiet", "panic=-1"{tcg}]
ready = "^bench: starting"
{argv}

[[workload]]
name = "guest_program"
label = "own-bench"

[[workload.metrics]]
name = "getpid"
regex = '^getpid: (?P<value>\\d+) cycles'
unit = "cycles"
better = "lower"

[[workload.metrics]]
name = "sched_yield"
regex = '^sched_yield: (?P<value>\\d+) cycles'
unit = "cycles"
better = "lower"

[[workload]]
name = "guest_program"
label = "missing-line"

[[workload.metrics]]
name = "malloc"
regex = '^malloc: (?P<value>\\d+) cycles'
unit = "cycles"
better = "lower"
"""


def own_initramfs(folder: Path) -> Path:
    """A guest of its own: busybox and an /init that prints its benchmark's lines."""
    root = folder / "root"
    (root / "bin").mkdir(parents=True)
    busybox = next(p for p in ("/bin/busybox", "/usr/bin/busybox") if Path(p).exists())
    shutil.copy(busybox, root / "bin" / "busybox")
    (root / "init").write_text(OWN_INIT)
    (root / "init").chmod(0o755)
    archive = folder / "own.cpio"
    names = "\n".join(str(p.relative_to(root)) for p in sorted(root.rglob("*"))) + "\n"
    with open(archive, "wb") as out:
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], input=names.encode(), cwd=root,
                       stdout=out, check=True, timeout=60)
    return archive


def test_a_guest_of_its_own_gives_samples_from_its_console(tmp_path, host_facts):
    if shutil.which("qemu-system-x86_64") is None or shutil.which("cpio") is None:
        pytest.skip("qemu-system-x86_64 or cpio not installed")
    from guestbench import images
    try:
        kernel = images.default_kernel()
    except images.ImageError as error:
        pytest.skip(str(error))
    kernel = vmlinux.extract(Path(kernel))  # booted without decompressing: 3-4 s less
    initrd = own_initramfs(tmp_path)
    plan = OWN_PLAN.format(kernel=kernel, initrd=initrd, argv=OWN_ARGV.format(initrd=initrd),
                           tcg="".join(f', "{word}"' for word in tcg_args()))
    (tmp_path / "plan.toml").write_text(plan)
    result = guestbench("run", "plan.toml", cwd=tmp_path, timeout_s=300)
    assert result.returncode == 1, result.stderr  # missing-line's runs fail, as they should
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    runs = {}
    for entry in document["runs"]:
        runs.setdefault(entry["label"], []).append(entry)
    for entry in runs["own-bench"]:
        assert entry["status"] == "ok", entry["reason"]
        samples = {s["metric"]: s["value"] for s in entry["samples"]}
        assert samples["getpid"] == 1234 and samples["sched_yield"] == 5678
        assert 0 < samples["boot_first_byte"] <= samples["boot_ready"]
        assert samples["boot_ready"] <= samples["boot_powered_off"]
    for entry in runs["missing-line"]:
        assert entry["status"] == "failed"
        assert "metric malloc: regex '^malloc: (?P<value>\\d+) cycles'" in entry["reason"]


DISTRIBUTION_PLAN = """
[campaign]
name = "distribution-boot"
repeat = 1
timeout_s = 120

[[environment]]
name = "debian"
kind = "command"
image = "none"
kernel = "{kernel}"
kernel_args = ["console=ttyS0", "panic=-1"{tcg}]
ready = "^Loading, please wait"
done = "^Loading, please wait"
{argv}

[[workload]]
name = "boot_image"
"""


def test_a_distributions_kernel_and_initramfs_boot_to_the_line_named(tmp_path):
    """The host's own Debian kernel and initramfs, timed to initramfs-tools' first line."""
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 not installed")
    from guestbench import images
    try:
        kernel = Path(images.default_kernel())
    except images.ImageError as error:
        pytest.skip(str(error))
    initrd = kernel.with_name(kernel.name.replace("vmlinuz", "initrd.img"))
    if not initrd.is_file():
        pytest.skip(f"no initramfs beside {kernel} ({initrd} missing)")
    plan = DISTRIBUTION_PLAN.format(kernel=kernel, initrd=initrd, argv=OWN_ARGV.format(initrd=initrd),
                                    tcg="".join(f', "{word}"' for word in tcg_args()))
    (tmp_path / "plan.toml").write_text(plan)
    result = guestbench("run", "plan.toml", cwd=tmp_path, timeout_s=400)
    assert result.returncode == 0, result.stderr
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    assert len(document["runs"]) == 1
    for entry in document["runs"]:
        assert entry["status"] == "ok", entry["reason"]
        samples = {s["metric"]: s["value"] for s in entry["samples"]}
        assert 0 < samples["boot_first_byte"] <= samples["boot_ready"] <= samples["boot_powered_off"]
        print(f"\nboot to the ready line: {samples['boot_ready']:.0f} ms")
    markdown = guestbench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert "| VMM start -> the ready line (an own image's `ready`) |" in markdown


def test_an_extracted_vmlinux_boots_through_pvh(host_facts, agent_path, tmp_path):
    """kernel_format = "vmlinux", as Firecracker and Cloud Hypervisor want it; QEMU boots the
    ELF through its PVH entry, which lets this test run it without KVM."""
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 not installed")
    microvm = [*QEMU_PC, *SERIAL["stdio"]]
    microvm[microvm.index("pc")] = "microvm"
    env = command(host_facts, argv=microvm, kernel_format="vmlinux",
                  kernel_args=["console=ttyS0", "reboot=t", *tcg_args()])
    assert env.boot_kernel.read_bytes()[:4] == b"\x7fELF"
    outcome, guest = run(env, agent_path, tmp_path, ["--min-time", "0.02", "getpid"])
    assert outcome.status == Status.OK, outcome.reason
    assert "agent_ready" in guest.boot_phases()


def test_a_scratch_disk_through_disk_argv_and_a_reboot_shutdown(host_facts, agent_path,
                                                                  tmp_path):
    """disk_argv comes only with a run that has a disk; shutdown = "reboot" ends a VMM that
    exits on a reset (QEMU with -no-reboot stands in for Firecracker and kvmtool here)."""
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 not installed")
    spec = environments.spec_model("command")(
        name="cmd", kind="command", argv=[*QEMU_PC, *SERIAL["stdio"]], shutdown="reboot",
        kernel_format="vmlinux",
        disk_argv=["-drive", "file={disk},format=raw,if=virtio"],
        kernel_args=["console=ttyS0", "reboot=k", *tcg_args()])
    env = environments.create(spec)
    # the plan's workloads use a disk: the image gets virtio_blk and ext4
    env.plan_workloads(PlanNeeds(capabilities=frozenset({Capability.FILESYSTEM})))
    prepared(host_facts, env)
    job = Job("exec", agent_path, ("exec", "/bin/busybox", "touch", "written-on-the-disk"),
              JobNeeds(scratch=True))
    guest = env.start(job, tmp_path / "logs", proc.now_ns() + int(120e9))
    with guest:
        outcome = watch(guest, 120, "exec")
    assert_gone(guest)
    assert outcome.status == Status.OK, outcome.reason
    console = (tmp_path / "logs" / "stdout.log").read_text(errors="replace")
    assert "reboot: Restarting system" in console
    assert "-drive file=" in (tmp_path / "logs" / "command").read_text()


def test_start_and_footprint_of_a_vmm_from_a_template(tmp_path, host_facts):
    """The instance workloads under the command kind: QEMU PC under TCG from its argv
    template, timed to its agent and weighed, its guest's RAM told apart."""
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 not installed (apt-get install qemu-system-x86)")
    argv = ", ".join(json.dumps(word) for word in [*QEMU_PC, *SERIAL["stdio"]])
    kernel_args = ", ".join(json.dumps(word) for word in ["console=ttyS0", *tcg_args()])
    plan = tmp_path / "instance.toml"
    plan.write_text(f'[campaign]\nrepeat = 1\n\n[[environment]]\nname = "cmd"\n'
                    f'kind = "command"\nkernel_format = "vmlinux"\nargv = [{argv}]\n'
                    f'kernel_args = [{kernel_args}]\n\n'
                    '[[workload]]\nname = "start"\n\n'
                    '[[workload]]\nname = "footprint"\nsettle_s = 0.2\n')
    for entry in ok_runs(tmp_path, 2, str(plan)):
        got = {sample["metric"]: sample["value"] for sample in entry["samples"]}
        if entry["workload"] == "start":
            assert 0 < got["start_ready"] < entry["host_seconds"] * 1000
        else:
            assert 0 < got["footprint_overhead"] < got["footprint_pss"], got


def test_density_and_a_network_through_net_argv(tmp_path, host_facts):
    """The command kind with two instances at once (each its own workdir and {name}), and a
    NIC from net_argv on the run's tap, {tap} and {mac} filled in."""
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 not installed (apt-get install qemu-system-x86)")
    if os.geteuid() != 0:
        pytest.skip("a tap device needs root")
    argv = ", ".join(json.dumps(word) for word in [*QEMU_PC, *SERIAL["stdio"]])
    nic = ", ".join(json.dumps(word) for word in [
        "-netdev", "tap,id=n0,ifname={tap},script=no,downscript=no",
        "-device", "virtio-net-pci,netdev=n0,mac={mac}"])
    kernel_args = ", ".join(json.dumps(word) for word in ["console=ttyS0", *tcg_args()])
    plan = tmp_path / "more.toml"
    plan.write_text(f'[campaign]\nrepeat = 1\ntimeout_s = 120\n\n[[environment]]\n'
                    f'name = "cmd"\nkind = "command"\nkernel_format = "vmlinux"\nargv = [{argv}]\n'
                    f'net_argv = [{nic}]\n'
                    f'kernel_args = [{kernel_args}]\n\n'
                    '[[workload]]\nname = "density"\ninstances = 2\nsettle_s = 0.2\n\n'
                    '[[workload]]\nname = "net_rr"\nmin_time_s = 0.05\nvalues = 3\n')
    for entry in ok_runs(tmp_path, 2, str(plan)):
        got: dict[str, list[float]] = {}
        for sample in entry["samples"]:
            got.setdefault(sample["metric"], []).append(sample["value"])
        if entry["workload"] == "density":
            assert got["density_started"] == [2] and len(got["density_start"]) == 2, got
        else:
            assert len(got["rr_p50"]) == 3 and all(value > 0 for value in got["rr_p50"]), got
