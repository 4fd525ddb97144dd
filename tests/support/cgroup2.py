"""A cgroup v2 host, simulated on a cgroup v1 hybrid one: a command run in a private mount
namespace where /sys/fs/cgroup is a cgroup2 mount. runc tells v2 from v1 by the filesystem
type of /sys/fs/cgroup, so there it makes its cgroups in the v2 tree alone, as on a v2 host.

The mount is the host's single v2 hierarchy, mounted again: what the command leaves in it is
seen outside too, under /sys/fs/cgroup/unified. The v1 hierarchies keep their controllers
(the v2 tree has only those none of them took: hugetlb on one host), which a container
without resource limits does not need.

The namespace ends with its last process: unshare kills its child if it is itself killed,
and a command that outlives its timeout is killed with its process group."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

UNIFIED = Path("/sys/fs/cgroup/unified")
MOUNT_FAILED = 97  # the script's exit status when /sys/fs/cgroup could not be made cgroup2
# "$@" is the command; it runs only once /sys/fs/cgroup is cgroup2 (statfs, as runc reads it)
SCRIPT = ('mount -t cgroup2 none /sys/fs/cgroup && '
          '[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || exit 97; exec "$@"')


def missing() -> str:
    """Why the simulation cannot run on this host; '' if it can."""
    if os.geteuid() != 0:
        return "simulating cgroup v2 needs root (a mount namespace and a mount)"
    if shutil.which("unshare") is None or shutil.which("stat") is None:
        return "simulating cgroup v2 needs unshare and stat (util-linux, coreutils)"
    if not (UNIFIED / "cgroup.procs").is_file():
        return (f"no cgroup v2 tree at {UNIFIED}: this host is not cgroup v1 hybrid (a v2 "
                "host needs no simulation, a v1-only one cannot have it)")
    return ""


def run(argv: list[str], cwd: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    """argv, with /sys/fs/cgroup a cgroup2 mount; exit status MOUNT_FAILED if it could not be."""
    command = ["unshare", "--mount", "--propagation", "private", "--fork", "--kill-child",
               "sh", "-c", SCRIPT, "sh", *argv]
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its own group: the session made for it
        stdout, stderr = process.communicate()
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
