"""Scratch disks of full-system guests: an ext4 image made on the host, attached per run.

The guest image's busybox has no mkfs, so the host makes the filesystem
(`mkfs.ext4 -d` also copies a run's input files in: a build tree, a prepared fio
file), converts it to qcow2 when asked, and the image's /init mounts it at
/scratch (kernel argument gb.scratch=DEVICE). Every run gets a fresh disk, so no
run sees another's files or fragmentation.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guestbench.process import proc
from guestbench.environments.base import GuestStartError, JobNeeds
from guestbench.environments.scratch import uncache

GUEST_SCRATCH = "/scratch"
MKFS_TIMEOUT_S = 120
# lazy_*_init=0: the guest kernel must not initialise inode tables in the background
# while a workload is being measured; -m 0: no blocks reserved for root
FILESYSTEM_MODULES = ("ext4",)  # the guest's driver for the scratch disk's filesystem
MKFS_OPTIONS = ("-q", "-F", "-t", "ext4", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0")
SLACK_MIB = 64


def make_scratch_disk(folder: Path, needs: JobNeeds, size_mib: int, fmt: str = "raw") -> Path:
    """A fresh ext4 image in folder holding needs.scratch_files; qcow2 when fmt says so."""
    files_mib = _tree_mib(needs.scratch_files) if needs.scratch_files else 0
    size_mib = max(size_mib, needs.scratch_mib + files_mib + SLACK_MIB)
    free_mib = shutil.disk_usage(folder).free // 2**20
    if free_mib < files_mib + SLACK_MIB:
        raise GuestStartError(f"{folder} has {free_mib} MiB free, the scratch disk needs at "
                              f"least {files_mib + SLACK_MIB} (fix: free space or set TMPDIR)")
    raw = folder / "scratch.raw"
    with open(raw, "wb") as file:
        file.truncate(size_mib * 2**20)
    populate = ["-d", str(needs.scratch_files)] if needs.scratch_files else []
    _run(["mkfs.ext4", *MKFS_OPTIONS, *populate, str(raw)], "e2fsprogs")
    image = raw
    if fmt == "qcow2":
        image = folder / "scratch.qcow2"
        _run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(image)],
             "qemu-utils")
        raw.unlink()
    if needs.uncache_files:
        uncache(image)
    return image


def _tree_mib(root: Path) -> int:
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return -(-total // 2**20)


def _run(argv: list[str], package: str) -> None:
    try:
        result = proc.run(argv, timeout_s=MKFS_TIMEOUT_S, env={**os.environ, "LC_ALL": "C"})
    except proc.ProcessError as error:
        raise GuestStartError(f"{error} (apt-get install {package})") from None
    except proc.DeadlineExceeded:
        raise GuestStartError(f"{argv[0]} took over {MKFS_TIMEOUT_S} s") from None
    if result.returncode != 0:
        said = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["?"]
        raise GuestStartError(f"{argv[0]} failed making the scratch disk: {said[0][:200]}")


def trace_collector(disk: Any, logdir: Path, collected: dict[str, Any]) -> Callable[[], None]:
    """A finalizer for a guest's traced disk: once the VMM is gone, stop the trace, keep its
    text in the run's log folder and its events as the run's "block_trace", detach it."""
    def collect() -> None:
        try:
            collected["block_trace"] = disk.stop()
            logdir.mkdir(parents=True, exist_ok=True)
            (logdir / "block-trace.txt").write_text(disk.raw_trace)
        finally:
            disk.close()
    return collect
