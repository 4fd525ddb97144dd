"""A Xen dom0 as the machine a PV domU's runs are started in (the `xen-pv` kind).

It is the nested kinds' L1 machine (nested.py) with Xen in place of KVM: QEMU boots Xen
(multiboot, as the `xen` kind does) with the L1 image's kernel as a PV dom0 and the L1
image's /init (l1_init.py), which mounts the host's root read-only over 9p and serves runs
on a virtio-serial port. Before the first run, dom0 starts Xen's toolstack from the host's
packages, chrooted in that root (TOOLSTACK below): xenstored, xen-init-dom0, xenconsoled.
A domU is then started with `xl create -c`, whose output (the domU's console, through
xenconsoled) is the run's.

What it took, each found by trying (docs/environments.md, "Xen PV guests"): machine `pc`
with the 9p and virtio-serial devices on PCI (microvm's firmware cannot start Xen); Xen's
console on the second serial port (a file in the machine's logs), dom0 driving the first;
writable tmpfs mounts over /run, /var/lib/xen and /var/log/xen (the host's root is
read-only); xenfs at /proc/xen; the toolstack's programs called at their real paths
(/usr/lib/xen-VERSION/bin), not through /usr/sbin's wrappers, which ask the running Xen's
version of a script dom0's view may lack.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from guestbench import images
from guestbench.environments.base import Availability
from guestbench.host import which

# the machine (nested.Machine, which imports this module) is passed in: typed Any here
Machine = Any

# dom0's image: the 9p and virtio-console drivers of the L1 image, on PCI (no KVM in dom0)
MODULES = ("9p", "9pnet_virtio", "virtio_pci", "virtio_console")
DOM0_MIB = 768          # dom0's memory: its kernel, the page cache of the host's files over 9p
XEN_OVERHEAD_MIB = 256  # the machine's memory beyond its domains': Xen's own, its heap
XEN_LOG = "xen-console.log"
TOOLS = "/usr/lib/xen-*/bin"
NEEDED = ("xl", "xenstored", "xenconsoled", "xen-init-dom0")
TOOLSTACK_TIMEOUT_S = 120.0
# the toolstack's, and a domU disk's backend: a loop device over the run's file
XEN_MODULES = ("xen-privcmd", "xenfs", "xen-evtchn", "xen-gntdev", "xen-gntalloc",
               "xen-blkback", "loop")


def tools_folder() -> Path | None:
    """The newest /usr/lib/xen-VERSION/bin with Xen's toolstack in it, or None."""
    for folder in sorted(Path("/").glob(TOOLS.lstrip("/")), reverse=True):
        if all((folder / name).exists() for name in NEEDED):
            return folder
    return None


def probe() -> Availability:
    """Whether dom0 can run Xen's toolstack: the host's packages, which dom0 runs from its
    read-only view of the host's root."""
    folder = tools_folder()
    if folder is None or which("xenstore-read") is None:
        return Availability.no(
            "Xen's toolstack (xl, xenstored, xenconsoled, xenstore-read) is not installed "
            f"under {TOOLS} and on PATH (fix: apt-get install --no-install-recommends "
            "xen-utils-4.17 xenstore-utils)")
    return Availability.yes(f"a dom0 running Xen's toolstack from {folder}")


def command_line(machine: Machine, image: images.Image, control: Path,
                 binary: str) -> list[str]:
    """QEMU booting Xen with the L1 image as its dom0, serving the host on control."""
    shape, folder, logs = machine.shape, machine.folder, machine.logs
    xen_args = ["console=com2", "com2=115200,8n1",
                f"dom0_mem={DOM0_MIB}M,max:{DOM0_MIB}M", "dom0_max_vcpus=1", *shape.xen_args]
    dom0 = " ".join([str(image.kernel), "console=ttyS0", "quiet", "panic=-1", "reboot=t",
                     f"gb.work={folder}"])
    return [
        binary, "-M", "pc", "-accel", shape.accel,
        *(["-cpu", "max"] if shape.accel == "tcg" else ["-cpu", "host"]),
        "-smp", str(shape.vcpus), "-m", str(shape.memory_mib),
        "-nodefaults", "-no-user-config", "-display", "none",
        "-serial", "stdio", "-serial", f"file:{logs / XEN_LOG}", "-no-reboot",
        "-kernel", shape.xen, "-append", " ".join(xen_args),
        "-initrd", f"{_multiboot(dom0)},{_multiboot(str(image.initramfs))}",
        "-fsdev", "local,id=gbroot,path=/,security_model=none,readonly=on,multidevs=remap",
        "-device", "virtio-9p-pci,fsdev=gbroot,mount_tag=gbroot",
        "-fsdev", f"local,id=gbwork,path={folder},security_model=none",
        "-device", "virtio-9p-pci,fsdev=gbwork,mount_tag=gbwork",
        "-chardev", f"socket,id=gbctl,path={control}",
        "-device", "virtio-serial-pci,max_ports=2",
        "-device", "virtserialport,chardev=gbctl,name=gb.ctl,nr=1",
    ]


def _multiboot(text: str) -> str:
    """A word of -initrd's list, where a comma separates modules: commas doubled."""
    return text.replace(",", ",,")


def toolstack(tools: Path) -> str:
    """dom0's shell script (chrooted in the host's root) that starts Xen's toolstack and
    says `xl info`'s first lines; it fails with the step that failed."""
    bin_ = shlex.quote(str(tools))
    return f"""export PATH={bin_}:/usr/sbin:/usr/bin:/sbin:/bin
fail() {{ echo "gbdom0: failed: $*"; exit 1; }}
for place in /run /var/lib/xen /var/log/xen; do
    mount -t tmpfs tmpfs "$place" || fail "a tmpfs on $place"
done
mkdir -p /run/xen /run/lock /run/xen-hotplug /var/log/xen/console
# udev makes these, and devtmpfs does not: Xen's hotplug lock (locking.sh) stats /dev/stdin
# and, without it, retries forever (a domU's disk then never attaches)
ln -sf /proc/self/fd /dev/fd && ln -sf /proc/self/fd/0 /dev/stdin && \
    ln -sf /proc/self/fd/1 /dev/stdout && ln -sf /proc/self/fd/2 /dev/stderr || fail "/dev/stdin"
modprobe -a {' '.join(XEN_MODULES)} || fail "modprobe of Xen's dom0 modules"
mount -t xenfs xenfs /proc/xen || fail "mount of xenfs at /proc/xen"
xenstored --pid-file /run/xen/xenstored.pid || fail xenstored
n=0
until xenstore-read -s / >/dev/null 2>&1; do
    n=$((n + 1)); [ $n -lt 600 ] || fail "xenstored did not answer in 60 s"; sleep 0.1
done
xen-init-dom0 >/dev/null || fail xen-init-dom0
xenconsoled --log=none --pid-file /run/xen/xenconsoled.pid || fail xenconsoled
xl info | grep -E '^(xen_version|nr_cpus|total_memory|free_memory) ' || fail "xl info"
echo "gbdom0: toolstack ready"
"""


class ToolstackError(Exception):
    """dom0 could not start Xen's toolstack."""


def start_toolstack(machine: Machine) -> list[str]:
    """Starts the toolstack in dom0 (toolstack()); returns what `xl info` said. Raises
    ToolstackError with dom0's words if it failed."""
    tools = tools_folder()
    if tools is None:
        raise ToolstackError(probe().reason)
    workdir = machine.workdir()
    script = workdir / "toolstack.sh"
    script.write_text(toolstack(tools))
    log = machine.logs / "toolstack.log"
    run = machine.launch(["/bin/sh", str(script)], workdir, log,
                         machine.logs / "toolstack-stderr.log")
    status = run.wait(TOOLSTACK_TIMEOUT_S)
    try:
        said = [line.strip() for line in log.read_text(errors="replace").splitlines()
                if line.strip()]
    except OSError:
        said = []
    if status != 0:
        if status is None:
            run.kill()
        words = next((line for line in said if line.startswith("gbdom0: failed")),
                     f"it ended with {status}" if status is not None
                     else f"it did not end in {TOOLSTACK_TIMEOUT_S:g} s")
        raise ToolstackError(f"dom0 could not start Xen's toolstack: {words}; "
                             f"{machine.said()}")
    return [line for line in said if not line.startswith("gbdom0:")]
