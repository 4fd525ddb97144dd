"""Running a full-system environment inside a VM: the L1 machine and the runs inside it.

An environment with `inside = "tcg"` or `"kvm"` starts its VMM (the L2 guest's) inside an
L1 guest that QEMU boots on the host under that accelerator: TCG emulating AMD SVM with
nested paging, or the host's KVM where it allows nesting. The L1 guest sees the host's
root read-only over 9p and runs the VMM's command line unchanged, chrooted there
(l1_init.py); the VMM's console comes out on a virtio-serial port to the host, so the
agent's records cross both consoles with their checksums. One L1 serves every run of the
environments that share its shape (accelerator, memory, vCPUs), one run at a time, from
the campaign's first run to its end (Environment.close()).

docs/environments.md, "Inside a VM", says what the figures mean: under TCG they are
functional, not the speed of the hypervisor inside.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import selectors
import shlex
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from guestbench import agent, images
from guestbench.environments.base import Availability, GuestStartError
from guestbench.environments import scratch
from guestbench.environments.fullsystem import channels, dom0
from guestbench.environments.fullsystem.l1_init import (API_PORT, L1_INIT, RUN_ARGV,
                                                       RUN_PATH, SESSION_FILE, SHM, VMM_STDERR)
from guestbench.host import which
from guestbench.images import vmlinux
from guestbench.process import logcap, proc, reaper

L1_BINARY = "qemu-system-x86_64"
# TCG's model of an AMD CPU with SVM and nested paging: kvm_amd loads on it (max works too).
TCG_CPU = "EPYC-v3,+svm,+npt"
L1_MODULES = ("kvm_amd", "kvm_intel", "9p", "9pnet_virtio", "virtio_mmio", "virtio_console",
              "virtio_net", "vhost_vsock")  # vhost_vsock: an inner QEMU's vsock (vsock_rr)
# The L1 machine's own user network (slirp), apart from its guests' 10.0.2.0/24: a guest's
# agent reaches the host's peer at L1_HOST, through its VMM's slirp, then L1's
L1_NET = "10.1.0.0/24"
L1_ADDRESS = "10.1.0.15/24"
L1_HOST = "10.1.0.2"
L1_EXTRA_MIB = 1024   # beyond the inner guest's memory: the L1 kernel, its page cache of the
                      # host's files read over 9p, a UML guest's memory file in /dev/shm
L1_BOOT_TIMEOUT_S = 180.0
KILL_WAIT_S = 10.0
FEED_SCRIPT = "feed.sh"  # sourced by a run's script before it starts the VMM, if there
# A reading of every thread in the machine (process/threads.py); the run's session picks the
# VMM's. One grep: under emulation each process started there costs tens of milliseconds.
THREADS_READ = ("grep -H '' /proc/uptime /proc/[0-9]*/task/*/stat /proc/[0-9]*/task/*/schedstat "
                "2>/dev/null; true")
THREADS_READ_TIMEOUT_S = 10
L1_SHM = SHM  # the L1 machine's own tmpfs: sockets and FIFOs live there
# UML's serial line inside the L1 machine: the two descriptors the shell gives it (one
# digit: the shell's limit; not 4, which is UML's ubd pipe)
INSIDE_FDS = (7, 8)
# An inner QEMU's QMP, where a run asks for one (a snapshot's save and restore): a TCP port
# on L1's own address, which the L1 machine's user network forwards from a port of the
# host's loopback (Machine.qmp_address). One run at a time: one port.
INNER_QMP_PORT = 4444
INNER_QMP = f"tcp:{L1_ADDRESS.split('/')[0]}:{INNER_QMP_PORT},server=on,wait=off"
KVM_NESTED = {"amd": Path("/sys/module/kvm_amd/parameters/nested"),
              "intel": Path("/sys/module/kvm_intel/parameters/nested")}


class L1Error(Exception):
    """The L1 machine could not be started, or stopped serving."""


# ---- what can nest here (fast checks, for probe()) ----

def probe(accel: str) -> Availability:
    """Whether an L1 machine under accel could start here, from files alone."""
    if which(L1_BINARY) is None:
        return Availability.no(f"inside = \"{accel}\" needs {L1_BINARY} for the L1 machine "
                               "(apt-get install qemu-system-x86)")
    try:
        kernel = images.default_kernel()
    except images.ImageError as error:
        return Availability.no(f"inside: no kernel for the L1 machine: {error}")
    tree = Path("/lib/modules") / images.kernel_version(kernel)
    if not list(tree.glob("kernel/arch/x86/kvm/kvm-*.ko*")):
        return Availability.no(f"inside: the L1 kernel {kernel.name} has no kvm_amd or "
                               f"kvm_intel module under {tree} (install its modules package)")
    if accel == "kvm":
        return _host_nesting()
    return Availability.yes(f"nested in an L1 guest under TCG emulating SVM ({TCG_CPU})")


def _host_nesting() -> Availability:
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return Availability.no("inside = \"kvm\" needs the host's /dev/kvm (not a KVM host, or "
                               "not readable and writable by this user)")
    for vendor, parameter in KVM_NESTED.items():
        try:
            value = parameter.read_text().strip()
        except OSError:
            continue
        if value in ("1", "Y", "y"):
            return Availability.yes(f"nested in an L1 guest under the host's KVM (kvm_{vendor} "
                                    "nested=1)")
        return Availability.no(f"inside = \"kvm\" needs nested virtualisation in the host's "
                               f"kvm_{vendor}, which is off ({parameter} says {value}; fix: "
                               f"modprobe -r kvm_{vendor} && modprobe kvm_{vendor} nested=1)")
    return Availability.no("inside = \"kvm\": the host's KVM module is neither kvm_amd nor "
                           "kvm_intel, so nesting cannot be checked")


# ---- the L1 machine ----

@dataclass(frozen=True)
class Shape:
    """What makes two environments' L1 machines interchangeable."""

    accel: str
    memory_mib: int
    vcpus: int
    xen: str = ""                   # Xen's ELF where the machine is a Xen dom0 (dom0.py)
    xen_args: tuple[str, ...] = ()  # Xen's command line beyond its console and dom0's memory


class Machine:
    """One L1 guest on the host, serving runs one at a time over its control port."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.folder: Path | None = None
        self.process: proc.Process | None = None
        self.channel: socket.socket | None = None
        self.kvm = False
        self.boot_s: float | None = None
        self.toolstack_s: float | None = None  # a Xen dom0's: its toolstack's start
        self.xen_info: list[str] = []
        self.kernel: Path | None = None
        self.image_id: str | None = None
        self.logs: Path | None = None
        self.runs = 0
        self.qmp_port = 0
        self.api_port = 0
        self.busy: "Run | None" = None
        self._ids = itertools.count(1)
        self._buffer = bytearray()
        self._lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def boot(self) -> None:
        """Build (or find) the L1 image and boot it until it says it is ready."""
        try:
            kernel = images.default_kernel()
            try:
                kernel = vmlinux.extract(kernel)  # PVH: no decompression under TCG
            except (images.ImageError, OSError):
                pass
            modules = dom0.MODULES if self.shape.xen else _l1_modules(kernel)
            image = images.build(kernel, modules=modules, init=L1_INIT)
        except images.ImageError as error:
            raise L1Error(f"L1 image: {error}") from None
        self.kernel, self.image_id = kernel, image.id
        self.folder = scratch.socket_folder("guestbench-l1-")
        reaper.KEEPER.folder(str(self.folder))
        self.logs = self.folder.with_name(self.folder.name + "-logs")
        self.logs.mkdir()
        reaper.KEEPER.folder(str(self.logs))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        control = self.folder / "ctl.sock"
        listener.bind(str(control))
        listener.listen(1)
        self.qmp_port, self.api_port = _free_ports(2)
        argv = self.command_line(image, control)
        (self.logs / "command").write_text(" ".join(shlex.quote(a) for a in argv) + "\n")
        started = proc.now_ns()
        try:
            self.process = proc.Process(argv, self.logs / "console.log", self.logs / "stderr.log",
                                        stdout_to_log=True)
            listener.settimeout(30)
            self.channel, _ = listener.accept()
        except (proc.ProcessError, OSError) as error:
            self.stop()
            raise L1Error(f"the L1 machine did not start: {error}; {self.said()}") from None
        finally:
            listener.close()
        self.channel.setblocking(False)
        try:
            words = self._ready(started + int(L1_BOOT_TIMEOUT_S * 1e9))
        except L1Error:
            self.stop()
            raise
        self.boot_s = (proc.now_ns() - started) / 1e9
        self.kvm = "kvm=yes" in words
        if self.shape.xen:
            try:
                self.xen_info = dom0.start_toolstack(self)
            except (dom0.ToolstackError, GuestStartError) as error:
                self.stop()
                raise L1Error(str(error)) from None
            self.toolstack_s = (proc.now_ns() - started) / 1e9 - self.boot_s

    def command_line(self, image: images.Image, control: Path) -> list[str]:
        shape = self.shape
        if shape.xen:
            return dom0.command_line(self, image, control, L1_BINARY)
        accel_args = (["-accel", "tcg", "-cpu", TCG_CPU] if shape.accel == "tcg"
                      else ["-accel", "kvm", "-cpu", "host"])
        khz = agent.host_tsc_khz() if shape.accel == "tcg" else None
        append = ["console=ttyS0", "quiet", "panic=-1", "reboot=t", f"gb.work={self.folder}",
                  f"gb.net={L1_ADDRESS},{L1_HOST}",
                  *(["tsc=reliable", f"tsc_early_khz={khz}"] if khz else [])]
        return [
            L1_BINARY, "-M", "microvm", *accel_args,
            "-smp", str(shape.vcpus), "-m", str(shape.memory_mib),
            "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
            "-no-reboot", "-kernel", str(image.kernel), "-initrd", str(image.initramfs),
            "-append", " ".join(append),
            "-fsdev", "local,id=gbroot,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device", "virtio-9p-device,fsdev=gbroot,mount_tag=gbroot",
            "-fsdev", f"local,id=gbwork,path={self.folder},security_model=none",
            "-device", "virtio-9p-device,fsdev=gbwork,mount_tag=gbwork",
            "-netdev", f"user,id=gbl1net,net={L1_NET},"
                       f"hostfwd=tcp:127.0.0.1:{self.qmp_port}-:{INNER_QMP_PORT},"
                       f"hostfwd=tcp:127.0.0.1:{self.api_port}-:{API_PORT}",
            "-device", "virtio-net-device,netdev=gbl1net",
            "-chardev", f"socket,id=gbctl,path={control}",
            "-device", "virtio-serial-device,max_ports=2",
            "-device", "virtserialport,chardev=gbctl,name=gb.ctl,nr=1",
        ]

    def _ready(self, deadline_ns: int) -> str:
        for _, line in self._lines(lambda: deadline_ns, None):
            text = line.decode("utf-8", "replace")
            if text.startswith("gbl1: ready"):
                return text
            if text.startswith("gbl1: failed"):
                raise L1Error(f"the L1 machine failed: {text.removeprefix('gbl1: failed ')}; "
                              f"{self.said()}")
        raise L1Error(f"the L1 machine ended before it was ready; {self.said()}")

    def said(self) -> str:
        """The last lines of L1's console and QEMU's stderr, for a reason."""
        said = []
        for name in ("console.log", "stderr.log"):
            try:
                lines = (self.logs / name).read_text(errors="replace").splitlines()
            except (OSError, TypeError):
                continue
            said += [line.strip() for line in lines if line.strip()][-3:]
        return "L1 said: " + (" | ".join(said)[-500:] or "nothing")

    @property
    def qmp_address(self) -> tuple[str, int]:
        """Where the host reaches the QMP of an inner QEMU started with `-qmp INNER_QMP`."""
        return ("127.0.0.1", self.qmp_port)

    @property
    def api_address(self) -> tuple[str, int]:
        """Where the host reaches the API of a VMM that serves it at l1_init.API_SOCKET in
        the machine (l1_init.py forwards it)."""
        return ("127.0.0.1", self.api_port)

    def workdir(self) -> Path:
        """A fresh folder for one run, which the L1 guest sees at the same path."""
        return Path(tempfile.mkdtemp(prefix="run-", dir=self.folder))

    def launcher(self, workdir: Path):
        """proc.Process's stand-in for a guest object (ProcessGuest.launcher): argv started
        in this machine, its files in workdir."""
        def launch(argv: list[str], stdout_log: Path, stderr_log: Path,
                   pass_fds: tuple[int, ...] = (), stdout_to_log: bool = False,
                   stdin_pipe: bool = False) -> Run:
            if pass_fds or stdout_to_log:
                raise GuestStartError("the VMM would need host descriptors or a console apart "
                                      "from its output, which do not reach into the L1 machine")
            return self.launch(argv, workdir, stdout_log, stderr_log, stdin_pipe)
        return launch

    def launch(self, argv: list[str], workdir: Path, stdout_log: Path,
               stderr_log: Path, stdin_pipe: bool = False) -> "Run":
        """Start argv in the L1 guest; its output comes through the returned Run."""
        with self._lock:
            if not self.alive:
                raise GuestStartError(f"the L1 machine is gone; {self.said()}")
            if self.busy is not None and self.busy.returncode is None:
                raise GuestStartError("the L1 machine runs one inner guest at a time, and one "
                                      "is running")
            run_id = next(self._ids)
            script = _run_file(argv, workdir)
            run = Run(self, run_id, argv, workdir, stdout_log, stderr_log)
            self._send(f"{'runin' if stdin_pipe else 'run'} {run_id} {script}\n")
            self.busy = run
            self.runs += 1
            return run

    def side(self, command: str, timeout_s: float) -> tuple[int, str]:
        """Runs a shell command in the machine beside the run it holds (Xen's `xl save` of
        the domU that run started): its output goes to a file, its status to another, both
        in a folder the host reads; nothing of it comes on the control port, where a line
        could land inside one of the run's console lines. (status, output); GuestStartError
        if the machine is gone or the command did not end within timeout_s (it is then
        killed)."""
        with self._lock:
            if not self.alive:
                raise GuestStartError(f"the L1 machine is gone; {self.said()}")
            run_id = next(self._ids)
            folder = self.workdir()
            out, status = folder / "out", folder / "status"
            script = folder / "side.sh"
            q = shlex.quote
            script.write_text(
                f"export PATH={RUN_PATH} TMPDIR={L1_SHM}\n"
                f"( {command} ) >{q(str(out))} 2>&1 </dev/null\n"
                f"echo $? >{q(str(status))}.part && mv {q(str(status))}.part {q(str(status))}\n")
            self._send(f"side {run_id} {script}\n")
        deadline = proc.now_ns() + int(timeout_s * 1e9)
        try:
            while not status.exists():
                if proc.now_ns() > deadline or not self.alive:
                    if self.alive:
                        self._send(f"kill {run_id}\n")
                    said = out.read_text(errors="replace")[-300:] if out.exists() else ""
                    raise GuestStartError(
                        f"'{command}' did not end within {timeout_s:g} s in the L1 machine"
                        f"{f' (it said: {said.strip()})' if said.strip() else ''}")
                time.sleep(0.02)
            return int(status.read_text().strip() or 255), out.read_text(errors="replace")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _send(self, text: str) -> None:
        try:
            self.channel.setblocking(True)
            self.channel.sendall(text.encode())
        except OSError as error:
            raise GuestStartError(f"the L1 machine's control port: {error}") from None
        finally:
            self.channel.setblocking(False)

    def _lines(self, deadline, log) -> "itertools.chain":
        """(arrival, line) from the control port until it closes; log gets the bytes."""
        fd = self.channel.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                while (end := self._buffer.find(b"\n")) >= 0:
                    line = bytes(self._buffer[:end])
                    del self._buffer[:end + 1]
                    yield proc.now_ns(), line
                remaining_s = (deadline() - proc.now_ns()) / 1e9
                if remaining_s <= 0:
                    raise proc.DeadlineExceeded("deadline passed")
                if not selector.select(timeout=min(remaining_s, 1.0)):
                    if not self.alive:
                        return
                    continue
                try:
                    chunk = self.channel.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    return
                if log is not None:
                    log.write(chunk)
                self._buffer += chunk
                if len(self._buffer) > proc.MAX_LINE_BYTES and b"\n" not in self._buffer:
                    del self._buffer[proc.MAX_LINE_BYTES:]

    def stop(self) -> None:
        """End the L1 guest and remove its folder (its logs stay until the runs copied them)."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.process is not None:
            self.process.kill()
        for folder in (self.folder, self.logs):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
                reaper.KEEPER.folder_gone(str(folder))

    def facts(self) -> dict[str, object]:
        if self.shape.xen:
            return {"dom0": f"QEMU {self.shape.accel.upper()} "
                            f"{'max' if self.shape.accel == 'tcg' else 'host'}, "
                            f"{self.shape.memory_mib} MiB ({dom0.DOM0_MIB} MiB dom0's), "
                            f"{self.shape.vcpus} vCPU, kernel "
                            f"{self.kernel.name if self.kernel else '?'}",
                    "dom0_boot_s": round(self.boot_s, 2) if self.boot_s else None,
                    "dom0_toolstack_s": round(self.toolstack_s, 2) if self.toolstack_s else None}
        return {"l1": f"QEMU {self.shape.accel.upper()} "
                      f"{TCG_CPU if self.shape.accel == 'tcg' else 'host'}, "
                      f"{self.shape.memory_mib} MiB, {self.shape.vcpus} vCPU, kernel "
                      f"{self.kernel.name if self.kernel else '?'}",
                "l1_boot_s": round(self.boot_s, 2) if self.boot_s else None,
                "l1_kvm": self.kvm}


class InsideFeeder(channels.Feeder):
    """The host's side of a stream channel whose feeder runs inside the L1 machine."""

    def describe(self) -> str:
        return "the feeder ran inside the L1 machine (its last words: feeder.log in the run's folder)"


def relocated(setup: channels.ChannelSetup, workdir: Path) -> channels.ChannelSetup:
    """An upload channel as its VMM gets it inside the L1 machine: a stream channel's host
    feeder, whose socket or pipes would not reach in, gives way to the same feeder run as
    a program there (channels.py), started by the run's script before the VMM (feed.sh);
    file channels (9p, hostfs) read the host's file, which the L1 machine sees."""
    feeder = setup.feeder
    if not isinstance(feeder, (channels.SocketFeeder, channels.PipeFeeder)):
        return setup
    feeder.stop()  # its host socket or pipes: never used
    base = f"{L1_SHM}/gbup-{workdir.name}"
    program = [sys.executable, "-I", str(Path(channels.__file__))]
    log = shlex.quote(str(workdir / "feeder.log"))
    source = shlex.quote(str(feeder.source))
    if isinstance(feeder, channels.SocketFeeder):
        socket_path = f"{base}.sock"
        vmm_args = tuple(arg.replace(str(feeder.path), socket_path) for arg in setup.vmm_args)
        lines = [f"{shlex.join(program)} feed-socket {socket_path} {source} 2>>{log} &",
                 "n=0",
                 f'while [ ! -S {socket_path} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done']
    else:
        into, out = f"{base}.in", f"{base}.out"
        was = f"fd:{feeder.guest_in},fd:{feeder.guest_out}"
        now = f"fd:{INSIDE_FDS[0]},fd:{INSIDE_FDS[1]}"
        vmm_args = tuple(arg.replace(was, now) for arg in setup.vmm_args)
        lines = [f"mkfifo {into} {out}",
                 f"exec {INSIDE_FDS[0]}<>{into} {INSIDE_FDS[1]}<>{out}",
                 f"{shlex.join(program)} feed-fifo {into} {out} {source} 2>>{log} &"]
    (workdir / FEED_SCRIPT).write_text("\n".join(lines) + "\n")
    return dataclasses.replace(setup, vmm_args=vmm_args, pass_fds=(), feeder=InsideFeeder())


def _run_file(argv: list[str], workdir: Path) -> Path:
    """What the L1 machine's init starts for a run (l1_init.py): the VMM's argv on one line
    (l2.argv), which it starts itself; or, where a feeder must start first (feed.sh) or an
    argument holds a newline, a script for the host's shell (l2.sh). Under emulation a
    dynamically linked program's start costs tens of milliseconds: that shell was one more
    before every VMM."""
    joined = shlex.join(argv)
    if not (workdir / FEED_SCRIPT).exists() and "\n" not in joined:
        path = workdir / RUN_ARGV
        path.write_text(joined + "\n")
        return path
    path = workdir / "l2.sh"
    folder = shlex.quote(str(workdir))
    path.write_text(
        f"export PATH={RUN_PATH} TMPDIR={L1_SHM}\n"
        f"if [ -f {folder}/{FEED_SCRIPT} ]; then . {folder}/{FEED_SCRIPT}; fi\n"
        f"echo $$ >{folder}/{SESSION_FILE}\n"  # the session's leader: a builtin
        f"exec {joined} 2>{folder}/{VMM_STDERR}\n")
    return path


def _free_ports(count: int) -> list[int]:
    """count TCP ports of the host's loopback, each apart, that nothing listens on now (the
    L1 machine's QEMU binds them a moment later: should another take one first, that QEMU
    says so and fails)."""
    with contextlib.ExitStack() as held:  # all bound at once: no port given twice
        probes = [held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                  for _ in range(count)]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]


def _l1_modules(kernel: Path) -> tuple[str, ...]:
    """L1's modules that this kernel has (an AMD-only or Intel-only build lacks the other)."""
    tree = Path("/lib/modules") / images.kernel_version(kernel)
    have = {path.name.split(".ko")[0].replace("-", "_")
            for path in tree.glob("kernel/arch/x86/kvm/kvm-*.ko*")}
    return tuple(m for m in L1_MODULES if not m.startswith("kvm_") or m in have)


class Run:
    """One inner VMM running in the L1 guest, as a host process looks to a guest object
    (proc.Process's interface): its console lines, its status, its kill."""

    def __init__(self, machine: Machine, run_id: int, argv: list[str], workdir: Path,
                 stdout_log: Path, stderr_log: Path) -> None:
        self.machine = machine
        self.id = run_id
        self.argv = argv
        self.workdir = workdir
        self.pid = machine.process.pid  # the host process holding it: the L1 machine's QEMU
        self.started_ns = proc.now_ns()
        self.first_byte_ns: int | None = None
        self._returncode: int | None = None
        self._ended = False
        self._stdout_log = logcap.CappedLog(stdout_log, proc.LOG_CAP_BYTES)
        self._stderr_log = stderr_log
        self._exited = f"gbl1: exited {run_id} ".encode()

    def thread_text(self) -> tuple[str, int | None]:
        """A reading of the machine's threads and the session of this run's VMM
        (process/threads.py); GuestStartError if the machine cannot read them."""
        try:
            session = int((self.workdir / SESSION_FILE).read_text().strip())
        except (OSError, ValueError):
            raise GuestStartError("the run's session id was not written (its script has not "
                                  "started yet)") from None
        _, text = self.machine.side(THREADS_READ, THREADS_READ_TIMEOUT_S)
        return text, session

    def lines(self, deadline_ns) -> "itertools.chain":
        deadline = deadline_ns if callable(deadline_ns) else (lambda: deadline_ns)
        if self._ended:
            return
        for arrival_ns, line in self.machine._lines(deadline, self._stdout_log):
            if line.startswith(self._exited):
                self._end(int(line[len(self._exited):].strip() or 255))
                return
            if line.startswith((b"gbl1: started ", b"gbl1: exited ")):  # its own, or a
                continue                                                  # side command's
            if self.first_byte_ns is None and line:
                self.first_byte_ns = arrival_ns
            yield arrival_ns, line
        self._end(None)  # the L1 machine ended

    def _end(self, status: int | None) -> None:
        self._ended = True
        if status is None:
            self._returncode = -9
        else:  # the shell's $?: 128+N for a signal N
            self._returncode = -(status - 128) if status > 128 else status
        self._close()

    def _close(self) -> None:
        self._stdout_log.close()
        if self.machine.busy is self:
            self.machine.busy = None
        try:
            said = (self.workdir / VMM_STDERR).read_bytes()
            with open(self._stderr_log, "ab") as log:
                log.write(said[-proc.LOG_CAP_BYTES:])
        except OSError:
            pass
        try:  # an upload's feeder, where it ran inside the L1 machine
            shutil.copyfile(self.workdir / "feeder.log",
                            Path(self._stderr_log).with_name("feeder.log"))
        except OSError:
            pass
        try:  # the L1 machine's console so far, beside the run's own logs
            shutil.copyfile(self.machine.logs / "console.log",
                            Path(self._stderr_log).with_name("l1-console.log"))
        except (OSError, TypeError):
            pass

    def wait(self, timeout_s: float) -> int | None:
        if not self._ended:
            deadline = proc.now_ns() + int(max(timeout_s, 0.0) * 1e9)
            try:
                for _ in self.lines(deadline):
                    pass
            except proc.DeadlineExceeded:
                return None
        return self._returncode

    def kill(self) -> None:
        if self._ended:
            return
        if self.machine.alive and self.machine.channel is not None:
            try:
                self.machine._send(f"kill {self.id}\n")
            except GuestStartError:
                pass
            if self.wait(KILL_WAIT_S) is not None:
                return
        self._end(None)

    def send(self, data: bytes) -> None:
        """Each line of data to the run's standard input (a run started with stdin_pipe);
        OSError if the run has ended or the L1 machine is gone."""
        if self._ended:
            raise OSError("the run has ended")
        for line in data.decode().splitlines():
            try:
                self.machine._send(f"line {self.id} {line}\n")
            except GuestStartError as error:
                raise OSError(str(error)) from None

    @property
    def returncode(self) -> int | None:
        return self._returncode

    def poll(self) -> int | None:
        return self._returncode

    @property
    def log_overflow(self) -> int:
        return self._stdout_log.dropped


# ---- the machines in use, one per shape ----

_machines: dict[Shape, Machine] = {}
_users: dict[int, int] = {}  # id(machine) -> the environments holding it
_registry_lock = threading.Lock()


def acquire(shape: Shape) -> Machine:
    """The L1 machine of this shape, booted if none runs (or the one there died); release()
    it when done."""
    with _registry_lock:
        machine = _machines.get(shape)
        if machine is None or not machine.alive:
            machine = Machine(shape)
            machine.boot()
            _machines[shape] = machine
        _users[id(machine)] = _users.get(id(machine), 0) + 1
        return machine


def release(machine: Machine) -> None:
    """One user fewer; the last one ends the machine."""
    with _registry_lock:
        left = _users.get(id(machine), 1) - 1
        if left > 0:
            _users[id(machine)] = left
            return
        _users.pop(id(machine), None)
        if _machines.get(machine.shape) is machine:
            del _machines[machine.shape]
    machine.stop()


def stop_all() -> None:
    """End every L1 machine of this process, whoever still holds it (a test session's end)."""
    with _registry_lock:
        machines = list(_machines.values())
        _machines.clear()
        _users.clear()
    for machine in machines:
        machine.stop()
