"""What a CRIU restore that never finished leaves of a container, ended: its processes (found by
the cgroup named after the container, which CRIU puts them in before runc records the
container: `runc delete` then knows nothing of them), its cgroups, and the root CRIU mounted
under the bundle. A command the reaper runs after `delete --force` (oci_snapshots.py), and a
teardown runs after a restored container's delete, where it finds nothing.

    python -m guestbench.environments.oci_leftovers CONTAINER_ID BUNDLE_FOLDER
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CGROUPS = Path("/sys/fs/cgroup")
GONE_S = 5.0


def _members(container_id: str) -> dict[int, list[Path]]:
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
                folders.append(CGROUPS / name / path.lstrip("/") if name else
                               CGROUPS / "unified" / path.lstrip("/"))
        if folders:
            found[int(entry.name)] = folders
    return found


def end(container_id: str, bundle: Path) -> None:
    members = _members(container_id)
    for pid in members:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    until = time.monotonic() + GONE_S
    while members and _members(container_id) and time.monotonic() < until:
        time.sleep(0.05)
    folders = {folder for paths in members.values() for folder in paths}
    folders |= {path for path in CGROUPS.glob(f"*/{container_id}")} | {
        path for path in CGROUPS.glob(container_id)}
    for folder in sorted(folders, key=lambda path: -len(path.parts)):
        try:
            folder.rmdir()
        except OSError:
            pass
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
