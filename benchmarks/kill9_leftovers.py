#!/usr/bin/env python3
"""What `kill -9` of guestbench leaves behind, kind by kind: the guest's processes and
guestbench's folders under /tmp while a run hangs, then after the kill (how long until
none is left, and how many there are 5 s after it), and what the next `guestbench run` on
the same store says and leaves.

    .venv/bin/python benchmarks/kill9_leftovers.py [PRESET ...]   (default: runc runsc qemu-tcg uml)

Each preset: a campaign of the `hang` workload in a fresh folder; once its guest runs the
workload (and 1.5 s more, for a sandbox or a VMM to get there), guestbench alone gets
SIGKILL by its pid. Run it as root on a quiet host; it needs nothing else running
guestbench at the same time (it counts every guest process of the machine).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.leaks import guest_folders, guest_processes  # noqa: E402

GUESTBENCH = [str(ROOT / ".venv/bin/python"), "-m", "guestbench"]
HANG_MARKS = (b"hang", b"qemu-system", b"linux.uml", b"runsc-sandbox")


def running_the_workload(pid: int) -> bool:
    try:
        return any(mark in Path(f"/proc/{pid}/cmdline").read_bytes() for mark in HANG_MARKS)
    except OSError:
        return False


def measure(preset: str) -> dict:
    processes, folders = guest_processes(), guest_folders()
    with tempfile.TemporaryDirectory(prefix="kill9-") as folder:
        store = f"sqlite:///{folder}/store.sqlite"
        child = subprocess.Popen([*GUESTBENCH, "run", "--env", preset, "--workload", "hang",
                                  "--repeat", "1", "--timeout", "120", "--quiet", "--db", store],
                                 cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not any(running_the_workload(pid) for pid in guest_processes() - processes):
            if child.poll() is not None or time.monotonic() > deadline:
                child.kill()
                return {"preset": preset, "error": child.stderr.read().decode()[-300:]
                        or "the hanging run did not start within 120 s"}
            time.sleep(0.1)
        time.sleep(1.5)
        during = (len(guest_processes() - processes), len(guest_folders() - folders))
        os.kill(child.pid, signal.SIGKILL)
        killed = time.monotonic()
        child.wait()
        gone_after = None
        while time.monotonic() - killed < 5.0:
            if not (guest_processes() - processes or guest_folders() - folders):
                gone_after = time.monotonic() - killed
                break
            time.sleep(0.05)
        time.sleep(max(0.0, 5.0 - (time.monotonic() - killed)))
        at_5s = (len(guest_processes() - processes), len(guest_folders() - folders))
        again = subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload", "getpid",
                                "--repeat", "1", "--quiet", "--db", store], cwd=folder,
                               capture_output=True, text=True, timeout=120)
        with sqlite3.connect(f"{folder}/store.sqlite") as connection:
            statuses = [row[0] for row in
                        connection.execute("select status from campaign order by id")]
        after_next = (len(guest_processes() - processes), len(guest_folders() - folders))
    said = [line for line in again.stderr.splitlines() if "left running" in line]
    return {"preset": preset, "during": during, "gone_after": gone_after, "at_5s": at_5s,
            "after_next": after_next, "statuses": statuses, "said": said[0] if said else ""}


def main() -> None:
    presets = sys.argv[1:] or ["runc", "runsc", "qemu-tcg", "uml"]
    print("| kind | while hanging: processes, folders | all gone after | at 5 s | after the "
          "next run | campaigns then |")
    print("|---|---|---|---|---|---|")
    said = []
    for preset in presets:
        found = measure(preset)
        if "error" in found:
            print(f"| {preset} | could not start: {found['error']} | | | | |")
            continue
        gone = f"{found['gone_after']:.2f} s" if found["gone_after"] is not None else "not within 5 s"
        print(f"| {preset} | {found['during'][0]}, {found['during'][1]} | {gone} | "
              f"{found['at_5s'][0]}, {found['at_5s'][1]} | {found['after_next'][0]}, "
              f"{found['after_next'][1]} | {', '.join(found['statuses'])} |", flush=True)
        said.append(f"{preset}: {found['said']}")
    print("\nThe next run said:")
    print("\n".join(said))


if __name__ == "__main__":
    main()
