"""Facts about the host that travel with every result, and its fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYS_CPU = Path("/sys/devices/system/cpu")


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


def collect() -> Host:
    """Read the host's facts; every read tolerates a missing file."""
    cpuinfo = _cpuinfo()
    flags = set(cpuinfo.get("flags", "").split())
    return Host({
        "hostname": socket.gethostname(),
        "arch": platform.machine(),
        "cpu_model": cpuinfo.get("model name", platform.processor() or "unknown"),
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
    })


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
