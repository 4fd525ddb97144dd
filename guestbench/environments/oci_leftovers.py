"""What a container can leave past `delete --force`, ended.

- A CRIU restore that never finished: its processes (found by the cgroup named after the
  container, which CRIU puts them in before runc records the container: `runc delete` then
  knows nothing of them), its cgroups, and the root CRIU mounted under the bundle. A command
  the reaper runs after `delete --force` (oci_snapshots.py), and a teardown runs after a
  restored container's delete, where it finds nothing.

    python -m guestbench.environments.oci_leftovers CONTAINER_ID BUNDLE_FOLDER

- A `runc create` or `run` killed by the run timeout before runc recorded its container:
  the cgroup folders runc had made for it, in each cgroup v1 hierarchy (or in the v2 tree),
  and its `runc init` if it had started, waiting in them for a start that never comes and
  holding the run's output pipes open: `runc delete` knows none of them. Each runc run's
  teardown ends them (end(), after the timed delete); the reaper runs command() if
  guestbench was killed first. A killed `runc init` is a zombie until its parent (pid 1,
  once runc is killed) reaps it: /proc/PID/cgroup still names its v2 cgroup, but it holds
  nothing and rmdir removes that cgroup, so end() does not wait for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CGROUPS = Path("/sys/fs/cgroup")
SELF = Path("/proc/self/cgroup")
GONE_S = 5.0


def _members(container_id: str, root: Path = CGROUPS) -> dict[int, list[Path]]:
    """pid -> the cgroup folders of every process in a cgroup named after the container."""
    found: dict[int, list[Path]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            lines = (entry / "cgroup").read_text().splitlines()
        except OSError:
            continue
        folders = []
        for line in lines:
            _number, controllers, path = line.split(":", 2)
            if path.rstrip("/").endswith("/" + container_id):
                name = controllers.removeprefix("name=") if controllers else ""
                folders.append(root / name / path.lstrip("/") if name else
                               root / "unified" / path.lstrip("/"))
        if folders:
            found[int(entry.name)] = folders
    return found


def _exited(pid: int) -> bool:
    """Every thread of the process has exited (a zombie, or gone): a zombie leader whose
    other threads still run is not, as they are still in the cgroup."""
    try:
        return all(_state(task) in ("Z", "X") for task in Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True


def _state(task: Path) -> str:
    try:
        return (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def _live_members(container_id: str, root: Path) -> list[int]:
    # a zombie is not waited for: its reaper may be slow (pid 1 took up to 2 s on a host)
    return [pid for pid in _members(container_id, root) if not _exited(pid)]


def _named(container_id: str, root: Path) -> list[Path]:
    """The cgroup folders named after the container: in a v1 hierarchy, or the v2 tree, at
    its top or under this process's own cgroup there (runc makes a container's cgroup
    under its caller's: a host that puts its jobs in a memory cgroup gets them there)."""
    return [*root.glob(f"*/{container_id}"), *root.glob(container_id),
            *(folder for place in own_cgroups(root) for folder in [place / container_id]
              if folder.is_dir())]


def own_cgroups(root: Path = CGROUPS) -> list[Path]:
    """The folders of this process's own cgroups below the top of their hierarchies."""
    try:
        lines = SELF.read_text().splitlines()
    except OSError:
        return []
    places = []
    for line in lines:
        _number, controllers, path = line.split(":", 2)
        if path.strip("/") in ("", ".."):
            continue
        name = controllers.removeprefix("name=")
        bases = [root / name] if name else [root / "unified", root]
        places += [base / path.lstrip("/") for base in bases]
    return places


def remove_cgroups(container_id: str, root: Path = CGROUPS) -> list[Path]:
    """Removes the empty cgroup folders named after the container (a folder that still holds
    a process or a child cgroup stays: rmdir refuses it); returns those removed."""
    removed = []
    for folder in sorted(_named(container_id, root), key=lambda path: -len(path.parts)):
        try:
            folder.rmdir()
        except OSError:
            continue
        removed.append(folder)
    return removed


def command(container_id: str, bundle: Path) -> list[str]:
    """end() as a command: the reaper's after `delete --force`, if guestbench was killed."""
    return [sys.executable, "-m", "guestbench.environments.oci_leftovers", container_id,
            str(bundle)]


def end(container_id: str, bundle: Path, root: Path = CGROUPS) -> None:
    """Kills every process in a cgroup named after the container, removes those cgroups and
    unmounts what is mounted under the bundle; finds nothing after a container's delete."""
    members = _members(container_id, root)
    for pid in members:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    until = time.monotonic() + GONE_S
    while members and _live_members(container_id, root) and time.monotonic() < until:
        time.sleep(0.05)
    for folder in sorted({folder for paths in members.values() for folder in paths},
                         key=lambda path: -len(path.parts)):
        try:
            folder.rmdir()
        except OSError:
            pass
    remove_cgroups(container_id, root)
    mounted = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == str(bundle) or point.startswith(str(bundle) + "/"):
            mounted.append(point)
    for point in sorted(mounted, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def main() -> None:
    if len(sys.argv) == 3:  # guestbench writes the command: anything else is not its own
        end(sys.argv[1], Path(sys.argv[2]))


if __name__ == "__main__":
    main()
