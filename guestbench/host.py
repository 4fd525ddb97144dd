"""Facts about the host that travel with every result, its fingerprint, and its noise checks."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import socket
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYS_CPU = Path("/sys/devices/system/cpu")
# /proc/stat's cpu line, in order; guest time is already counted in user and nice
CPU_TICK_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# A 1-minute load average above this share of the logical CPUs (and at least
# QUIET_LOAD_MIN), with another process running as the campaign starts, means other work
# competes with the measurements. A load left by work that ended (an earlier campaign: the
# average takes minutes to decay) is no warning: nothing else runs.
QUIET_LOAD_PER_CPU = 0.25
QUIET_LOAD_MIN = 0.5
RUNNING_READS = 5  # reads of the running processes' count, RUNNING_READ_S apart: their median
RUNNING_READ_S = 0.002
# What a campaign adds to the load by itself: one agent at a time, plus a
# runtime's threads or the second process of pipe_switch and fork_exit.
CAMPAIGN_OWN_LOAD = 2.0
STEAL_PCT_LIMIT = 1.0
# A host's class: the facts that decide how a workload runs there, whichever machine it is.
# Two campaigns whose CPU (vendor, model) or kernel differ ran on hosts of different classes,
# and a difference between them may be the host's: pyperf refuses to merge runs of different
# CPUs, Firecracker's A/B tests compare only within one CPU model and host kernel. The other
# facts of a class are shown with it; by themselves they set no two hosts apart.
CLASS_DECIDING = ("cpu_vendor", "cpu_model", "kernel")


@dataclass(frozen=True)
class Host:
    facts: dict[str, Any]

    @property
    def fingerprint(self) -> str:
        """Same machine, same CPU, same kernel: results are comparable as host-alike."""
        keys = ("hostname", "cpu_model", "logical_cpus", "kernel", "memory_mib", "arch")
        stable = {key: self.facts.get(key) for key in keys}
        return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def llc_bytes(self) -> int | None:
        return self.facts.get("llc_bytes")

    @property
    def host_class(self) -> HostClass:
        """Coarser than the fingerprint: the kind of host, not the machine."""
        return host_class(self.facts)


@dataclass(frozen=True)
class HostClass:
    """The class of the host a campaign ran on (CLASS_DECIDING above), read from its stored
    facts; each None where unknown, as in a store written before guestbench recorded it."""

    cpu_vendor: str | None = None  # /proc/cpuinfo's vendor_id: GenuineIntel, AuthenticAMD
    cpu_model: str | None = None
    xsave_bytes: int | None = None  # the XSAVE area ptrace hands out (guestbench/xsave.py)
    llc_bytes: int | None = None  # the last-level cache
    cgroup_mode: str | None = None  # v2, hybrid, v1 or none (cgroup_mode())
    kernel: str | None = None
    virtualised: bool | None = None  # itself a virtual machine (the hypervisor CPU flag)

    def shown(self) -> list[tuple[str, str]]:
        """Each fact as a write-up names it: ("CPU", "AMD EPYC (AuthenticAMD)"), ("XSAVE",
        "2440 B"), ("LLC", "32 MiB"), ("cgroup", "hybrid"), ("kernel", ...), ("VM", "yes")."""
        cpu = self.cpu_model or "unknown CPU"
        if self.cpu_vendor:
            cpu += f" ({self.cpu_vendor})"
        xsave = "unknown" if self.xsave_bytes is None else f"{self.xsave_bytes} B"
        return [("CPU", cpu), ("XSAVE", xsave), ("LLC", _cache_text(self.llc_bytes)), ("cgroup", self.cgroup_mode or "unknown"),
                ("kernel", self.kernel or "unknown"),
                ("VM", {True: "yes", False: "no", None: "unknown"}[self.virtualised])]

    def line(self) -> str:
        """One line: "AMD EPYC (AuthenticAMD), XSAVE 2440 B, LLC 32 MiB, cgroup hybrid,
        kernel 6.18.44, VM"."""
        shown = dict(self.shown())
        vm = {True: "VM", False: "not a VM", None: "VM unknown"}[self.virtualised]
        return ", ".join([shown["CPU"], *(f"{name} {shown[name]}" for name in
                                          ("XSAVE", "LLC", "cgroup", "kernel")), vm])

    def document(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "text": self.line()}

    def differences(self, other: HostClass) -> list[str]:
        """What differs from another class, as "CPU AMD EPYC vs Intel(R) Xeon(R) Processor",
        "kernel 6.18.44 vs 6.18.50": only facts known on both sides (unknown is no
        difference)."""
        said = []
        if _known_apart(self.cpu_model, other.cpu_model) or _known_apart(
                self.cpu_vendor, other.cpu_vendor):
            vendors = _known_apart(self.cpu_vendor, other.cpu_vendor)
            said.append("CPU " + " vs ".join(
                (one.cpu_model or "unknown") + (f" ({one.cpu_vendor})" if vendors else "")
                for one in (self, other)))
        mine, theirs = dict(self.shown()), dict(other.shown())
        for name, key in (("XSAVE", "xsave_bytes"), ("LLC", "llc_bytes"),
                          ("cgroup", "cgroup_mode"), ("kernel", "kernel"), ("VM", "virtualised")):
            if _known_apart(getattr(self, key), getattr(other, key)):
                said.append(f"{name} {mine[name]} vs {theirs[name]}")
        return said

    def apart_from(self, other: HostClass) -> bool:
        """Another class by a deciding fact (CLASS_DECIDING) known on both sides."""
        return any(_known_apart(getattr(self, key), getattr(other, key))
                   for key in CLASS_DECIDING)


def host_class(facts: dict[str, Any]) -> HostClass:
    """The class of the host these facts describe; a fact missing, or of a type no version
    of guestbench stored, is unknown."""
    def typed(key: str, kind: type) -> Any:
        value = facts.get(key)
        return value if isinstance(value, kind) and not (kind is int and isinstance(value, bool)) \
            else None
    return HostClass(typed("cpu_vendor", str), typed("cpu_model", str),
                     typed("xsave_bytes", int), typed("llc_bytes", int),
                     typed("cgroup_mode", str), typed("kernel", str), typed("virtualised", bool))


def class_shown(facts: dict[str, Any]) -> dict[str, str]:
    """HostClass.shown of these facts, a fact they lack "not recorded" (a campaign stored
    before guestbench recorded it) where "unknown" is a host's own answer."""
    shown = dict(host_class(facts).shown())
    for name, key in (("XSAVE", "xsave_bytes"), ("LLC", "llc_bytes"), ("cgroup", "cgroup_mode"),
                      ("kernel", "kernel"), ("VM", "virtualised")):
        if key not in facts:
            shown[name] = "not recorded"
    return shown


def _known_apart(mine: Any, theirs: Any) -> bool:
    return mine is not None and theirs is not None and mine != theirs


def _cache_text(size: int | None) -> str:
    """A cache's size: 32 MiB, 1.5 MiB, 512 KiB; unknown for None."""
    if size is None:
        return "unknown"
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size} B"


def collect() -> Host:
    """Read the host's facts; every read tolerates a missing file."""
    from guestbench import xsave  # deferred: ctypes, which only a campaign's start needs
    cpuinfo = _cpuinfo()
    flags = set(cpuinfo.get("flags", "").split())
    return Host({
        "hostname": socket.gethostname(),
        "arch": platform.machine(),
        "cpu_vendor": cpuinfo.get("vendor_id"),  # None where the CPU has none (arm64)
        "cpu_model": _cpu_model(cpuinfo),
        "xsave_bytes": xsave.host_xsave_bytes(),
        "logical_cpus": os.cpu_count(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "memory_mib": _memory_mib(),
        "virtualised": "hypervisor" in flags,
        "container": _container(),
        "governor": _read(SYS_CPU / "cpu0/cpufreq/scaling_governor") or "none (no cpufreq)",
        "mitigations": _mitigations(),
        "llc_bytes": _llc_bytes(),
        "tsc": {flag: flag in flags for flag in ("constant_tsc", "nonstop_tsc", "tsc_known_freq")},
        "cgroup_mode": cgroup_mode(),
        "load_avg": list(os.getloadavg()),
        "python": platform.python_version(),
        "disk": disk_of(Path.cwd()),
    })


def disk_of(path: Path, sys_root: Path = Path("/sys")) -> str | None:
    """The disk a path is on, as a write-up states it: "vda: virtio disk (virtual), 60 GiB",
    "nvme0n1: Samsung SSD 980, NVMe SSD, 932 GiB", "sda: ST2000DM008, HDD, 1863 GiB"; None
    where it is no block device (tmpfs, overlay, a network filesystem)."""
    try:
        device = os.stat(path).st_dev
        block = (sys_root / "dev" / "block" / f"{os.major(device)}:{os.minor(device)}").resolve()
    except OSError:
        return None
    if (block / "partition").exists():
        block = block.parent
    if not (block / "queue").exists():
        return None  # a device-mapper, loop or other stacked device: no one disk
    name = block.name
    model = " ".join((_read(block / "device" / "model") or "").split())
    size = _read(block / "size")
    parts = [model] if model else []
    if "virtio" in str(block) or name.startswith("vd"):
        parts.append("virtio disk (virtual)")
    elif name.startswith("nvme"):
        parts.append("NVMe SSD")
    else:
        parts.append("HDD" if _read(block / "queue" / "rotational") == "1" else "SSD")
    if size and size.isdigit():
        parts.append(f"{int(size) * 512 / 2**30:.0f} GiB")
    return f"{name}: " + ", ".join(parts)


def cgroup_mode() -> str:
    """'v2' (unified), 'hybrid' (v1 controllers with a v2 hierarchy beside) or 'v1'."""
    mounts = _read(Path("/proc/mounts")) or ""
    types = {line.split()[1]: line.split()[2] for line in mounts.splitlines() if len(line.split()) > 2}
    if types.get("/sys/fs/cgroup") == "cgroup2":
        return "v2"
    if types.get("/sys/fs/cgroup/unified") == "cgroup2":
        return "hybrid"
    return "v1" if any(kind == "cgroup" for kind in types.values()) else "none"


def which(program: str) -> str | None:
    return shutil.which(program)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpuinfo() -> dict[str, str]:
    facts: dict[str, str] = {}
    for line in (_read(Path("/proc/cpuinfo")) or "").splitlines():
        key, _, value = line.partition(":")
        if not key.strip():
            break  # first processor only
        facts.setdefault(key.strip(), value.strip())
    return facts


def _cpu_model(cpuinfo: dict[str, str]) -> str:
    """/proc/cpuinfo's model name; only without one what platform says (which starts
    a process, `uname -p`)."""
    if "model name" in cpuinfo:
        return cpuinfo["model name"]
    return platform.processor() or "unknown"


def _memory_mib() -> int | None:
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def _container() -> str | None:
    if Path("/.dockerenv").exists():
        return "docker"
    environ = _read(Path("/proc/1/environ")) or ""
    for entry in environ.split("\0"):
        if entry.startswith("container="):
            return entry.partition("=")[2]
    return None


def _mitigations() -> dict[str, str]:
    folder = SYS_CPU / "vulnerabilities"
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError:
        return {}
    return {name: _read(folder / name) or "" for name in names}


def _llc_bytes() -> int | None:
    sizes = []
    for index in sorted((SYS_CPU / "cpu0/cache").glob("index*")):
        text = _read(index / "size") or ""
        units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
        if text[:-1].isdigit() and text[-1] in units:
            sizes.append(int(text[:-1]) * units[text[-1]])
    return max(sizes) if sizes else None


# -- noise checks: snapshots before and after a campaign -----------------------------

def noise_snapshot(host: Host) -> dict[str, Any]:
    """The host's state now: load, frequency governors, CPU time so far, virtualisation."""
    taken = {"taken_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
             **snapshot_of(_read(Path("/proc/loadavg")) or "", _read(Path("/proc/stat")) or "",
                           _governors(), host.facts.get("logical_cpus") or os.cpu_count() or 1,
                           bool(host.facts.get("virtualised")))}
    load_1min = _load_1min(taken)
    if load_1min is None or load_1min <= quiet_load_limit(taken["logical_cpus"]):
        return taken  # no warning whatever runs now: one read of the running count will do
    reads = [taken["others_running"]]
    for _ in range(RUNNING_READS - 1):
        time.sleep(RUNNING_READ_S)
        reads.append(_others_running(_read(Path("/proc/loadavg")) or ""))
    known = [count for count in reads if count is not None]
    taken["others_running"] = int(statistics.median(known)) if known else None
    return taken


def snapshot_of(loadavg_text: str, stat_text: str, governors: dict[str, str] | None,
                logical_cpus: int, virtualised: bool) -> dict[str, Any]:
    """A snapshot from the text of /proc/loadavg and /proc/stat; governors None without cpufreq."""
    return {"load_avg": _load_avg(loadavg_text), "logical_cpus": logical_cpus,
            "governors": governors, "cpu_ticks": _cpu_ticks(stat_text), "virtualised": virtualised,
            "others_running": _others_running(loadavg_text)}


def noise_checks(before: dict[str, Any], after: dict[str, Any] | None,
                 during: list[float] | None = None) -> dict[str, Any]:
    """What the snapshots around a campaign, and the load sampled while it ran (during),
    say about noise; warnings never fail a campaign."""
    checks = {"before": before, "after": after, "steal_pct": steal_pct(before, after),
              "warnings": warnings_at_start(before) + warnings_at_end(before, after)}
    if during:
        checks["load_during"] = {"median": statistics.median(during), "max": max(during),
                                 "samples": len(during)}
    return checks


def load_now() -> float | None:
    """The 1-minute load average now; None where /proc/loadavg does not tell."""
    loads = _load_avg(_read(Path("/proc/loadavg")) or "")
    return loads[0] if loads else None


def warnings_at_start(before: dict[str, Any]) -> list[str]:
    """What can be said before the first run: load, frequency scaling, virtualisation."""
    warnings = []
    load_1min, cpus = _load_1min(before), before["logical_cpus"]
    others = before.get("others_running")  # None: not read (a campaign stored before)
    if load_1min is not None and load_1min > quiet_load_limit(cpus) and others != 0:
        running = "" if others is None else (
            f", and {others} other process{'es' if others > 1 else ''} running")
        warnings.append(
            f"the 1-minute load average was {load_1min:.2f} when the campaign started{running} "
            f"({cpus} logical CPUs): other work competes with the measurements for CPUs and caches")
    slow = sorted(name for name in (before["governors"] or {}).values() if name != "performance")
    if slow:
        names = ", ".join(sorted(set(slow)))
        warnings.append(
            f"the CPU frequency governor is {names} on {len(slow)} of {len(before['governors'])} "
            "CPUs, not performance: frequency scaling adds noise to every timing")
    if before["virtualised"]:
        warnings.append(
            "this host is itself a virtual machine (hypervisor CPU flag): its results carry the "
            "outer hypervisor's noise; compare them side by side only with results of this host")
    return warnings


def warnings_at_end(before: dict[str, Any], after: dict[str, Any] | None) -> list[str]:
    """What only the end can tell: steal time during the campaign, load that came meanwhile."""
    if after is None:
        return []
    warnings = []
    steal = steal_pct(before, after)
    if steal is not None and steal > STEAL_PCT_LIMIT:
        warnings.append(
            f"steal time was {steal:.1f}% of CPU time during the campaign: the outer hypervisor "
            "gave this host's CPUs to a neighbour, so timings include waits for them")
    load_before, load_after = _load_1min(before), _load_1min(after)
    if load_before is not None and load_after is not None and (
            load_after - load_before > CAMPAIGN_OWN_LOAD + quiet_load_limit(after["logical_cpus"])):
        warnings.append(
            f"the 1-minute load average rose from {load_before:.2f} to {load_after:.2f} during "
            "the campaign, more than its own runs explain: other work competed with the "
            "later measurements")
    return warnings


def quiet_load_limit(logical_cpus: int) -> float:
    return max(QUIET_LOAD_MIN, QUIET_LOAD_PER_CPU * logical_cpus)


def steal_pct(before: dict[str, Any], after: dict[str, Any] | None) -> float | None:
    """Steal time as a percentage of all CPU time between two snapshots; None if unknown."""
    ticks_before, ticks_after = before["cpu_ticks"], (after or {}).get("cpu_ticks")
    if not ticks_before or not ticks_after or "steal" not in ticks_before.keys() & ticks_after.keys():
        return None
    total = sum(ticks_after.values()) - sum(ticks_before.values())
    return 100 * (ticks_after["steal"] - ticks_before["steal"]) / total if total > 0 else None


def _load_1min(snapshot: dict[str, Any]) -> float | None:
    return snapshot["load_avg"][0] if snapshot["load_avg"] else None


# A check never fails a campaign: text that does not parse gives an unknown (None).
def _load_avg(loadavg_text: str) -> list[float] | None:
    try:
        return [float(value) for value in loadavg_text.split()[:3]] or None
    except ValueError:
        return None


def _others_running(loadavg_text: str) -> int | None:
    """Processes running or runnable now besides the one reading (/proc/loadavg's 4th field,
    running/total, counts it)."""
    fields = loadavg_text.split()
    try:
        return max(0, int(fields[3].split("/")[0]) - 1)
    except (IndexError, ValueError):
        return None


def _cpu_ticks(stat_text: str) -> dict[str, int] | None:
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            try:
                return dict(zip(CPU_TICK_FIELDS, map(int, line.split()[1:])))
            except ValueError:
                return None
    return None


def _governors() -> dict[str, str] | None:
    """Every CPU's scaling governor; None where the kernel has no cpufreq interface."""
    found = {path.parent.parent.name: _read(path) or "unknown"
             for path in SYS_CPU.glob("cpu[0-9]*/cpufreq/scaling_governor")}
    return dict(sorted(found.items(), key=lambda item: int(item[0][3:]))) or None
