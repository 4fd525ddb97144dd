"""Scratch folders for process-level environments: a fresh folder on a real filesystem per run.

Disk workloads must not write to tmpfs (it is memory, and O_DIRECT fails there), so the
folder is made under $GUESTBENCH_SCRATCH, else /var/tmp (a disk on Debian), never /tmp.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from guestbench.environments.base import GuestStartError, JobNeeds

DEFAULT_BASE = Path("/var/tmp")
# A folder that holds Unix sockets (a VMM's QMP and console sockets, a runtime's): a socket's
# path has at most 107 bytes, so the folder's path keeps room for the longest socket name
SOCKET_FOLDER_MAX = 80


def socket_folder(prefix: str) -> Path:
    """A new private folder for sockets: under $TMPDIR as usual, under /tmp where $TMPDIR's
    path is so long that a socket in it could not be made (QEMU: "UNIX socket path ... is
    too long", a run lost as infra)."""
    base = tempfile.gettempdir()
    if len(base) + len(prefix) + 9 > SOCKET_FOLDER_MAX:  # mkdtemp adds "/" and 8 characters
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def base_folder() -> Path:
    return Path(os.environ.get("GUESTBENCH_SCRATCH") or DEFAULT_BASE)


def make(needs: JobNeeds) -> Path | None:
    """A new scratch folder holding needs.scratch_files, or None when the run needs none.

    The caller owns the folder (ProcessGuest removes it with its other scratch).
    """
    if not needs.scratch and needs.scratch_files is None:
        return None
    base = base_folder()
    try:
        base.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="guestbench-scratch-", dir=base))
    except OSError as error:
        raise GuestStartError(f"cannot make a scratch folder under {base}: {error.strerror} "
                              "(fix: set GUESTBENCH_SCRATCH to a writable folder on a disk)") from None
    try:
        check_space(folder, needs.scratch_mib)
        if needs.scratch_files is not None:
            shutil.copytree(needs.scratch_files, folder, dirs_exist_ok=True, symlinks=True)
            if needs.uncache_files:
                uncache(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def check_space(folder: Path, mib: int) -> None:
    free_mib = shutil.disk_usage(folder).free // 2**20
    if mib and free_mib < mib + 64:
        raise GuestStartError(f"the scratch folder {folder} has {free_mib} MiB free, the workload "
                              f"needs {mib} MiB (fix: free space, or set GUESTBENCH_SCRATCH)")


def uncache(root: Path) -> None:
    """Write every file under root out and drop it from the host's page cache (fadvise)."""
    paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
