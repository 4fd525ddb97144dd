#!/usr/bin/env python3
"""A restore as guestbench times it, against the tool run by hand, side by side in one run.

    .venv/bin/python benchmarks/snapshot_by_hand.py [KIND ...]   (default: runsc runc qemu-tcg)

For each kind, ROUNDS rounds alternate a guestbench campaign of `restore` (RESTORES restores
of one image, dirty_mib = 64) with RESTORES restores by hand, and the medians of each side
are compared. By hand, the instance is the same agent (`gbagent --size-mib 64 snapshot`) and
each restore is timed from spawning the tool to the restored agent's `restored_token` line on
its output, as a person timing the command would:

- runsc, runc: `RUNTIME run` of a bundle holding the agent, `RUNTIME checkpoint
  --image-path`, `RUNTIME delete --force`; each restore `RUNTIME restore --bundle
  --image-path ID` with "go" already written into its stdin; `delete --force` after.
- qemu-tcg: the very command line of guestbench's run (its `saved/command` log), booted by
  hand with a QMP socket of its own, saved through plain QMP (`stop`, `migrate
  exec:cat > FILE`); each restore `qemu ... -incoming fd:N` with the file open on fd N (as
  `-incoming fd:3 3<FILE` in a shell: QEMU loads it as it starts), QMP's `query-status` asked until the
  guest is loaded (paused), `cont`, then "go" into QEMU's stdin. Not the QMP client, nor
  the getfd and migrate-incoming steps, that guestbench uses.

Run it as root on a quiet host (nothing else measuring); it prints one line per kind.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from guestbench.environments.kinds.oci import _Bundle  # noqa: E402  the same container config

GUESTBENCH = [str(ROOT / ".venv/bin/python"), "-m", "guestbench"]
AGENT = ROOT / "agent" / "gbagent"
ROUNDS, RESTORES, DIRTY_MIB = 4, 10, 64
RUNSC = ["--platform=ptrace", "--network=none", "--ignore-cgroups"]


def guestbench_round(kind: str, folder: Path, steps: dict[str, list[float]] | None = None
                     ) -> tuple[list[float], Path]:
    """One campaign of RESTORES restores: guestbench's values, and the run's log folder;
    each restore step's values (restore_load, ...) go into steps where it is given."""
    plan = folder / "plan.toml"
    plan.write_text(f'[campaign]\nrepeat = 1\ntimeout_s = 600\n\n[[environment]]\npreset = '
                    f'"{kind}"\n\n[[workload]]\nname = "restore"\ndirty_mib = {DIRTY_MIB}\n'
                    f'restores = {RESTORES}\n')
    store = f"sqlite:///{folder}/store.sqlite"
    subprocess.run([*GUESTBENCH, "run", str(plan), "--quiet", "--db", store], cwd=folder,
                   check=True, capture_output=True)
    report = json.loads(subprocess.run([*GUESTBENCH, "report", "--format", "json", "--db", store],
                                       cwd=folder, check=True, capture_output=True).stdout)
    (run,) = report["runs"]
    assert run["status"] == "ok", run["reason"]
    logs = next(folder.glob("guestbench-logs/*/*/restore/rep0"))
    for sample in run["samples"]:
        if steps is not None and sample["metric"].startswith("restore_"):
            steps.setdefault(sample["metric"], []).append(sample["value"])
    return [s["value"] for s in run["samples"] if s["metric"] == "restore"], logs


def _until(stream, word: bytes, deadline_s: float = 300) -> float:
    """Reads lines until one holds word; the monotonic time it arrived."""
    until = time.monotonic() + deadline_s
    for line in stream:
        if word in line:
            return time.monotonic()
        if time.monotonic() > until:
            break
    raise RuntimeError(f"no {word!r} line")


def oci_by_hand(runtime: str, folder: Path) -> list[float]:
    bundle = _Bundle(AGENT, ["--size-mib", str(DIRTY_MIB), "snapshot"])
    tool = [runtime, "--root", str(bundle.state), *(RUNSC if runtime == "runsc" else [])]
    cid, image = bundle.container_id, folder / "image"
    image.mkdir()
    took = []
    try:
        run = subprocess.Popen([*tool, "run", "--bundle", str(bundle.directory), cid],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
        _until(run.stdout, b"snapshot_ready")
        subprocess.run([*tool, "checkpoint", "--image-path", str(image), cid], check=True,
                       capture_output=True)
        run.wait(30)
        subprocess.run([*tool, "delete", "--force", cid], capture_output=True)
        for _ in range(RESTORES):
            began = time.monotonic()
            restore = subprocess.Popen([*tool, "restore", "--bundle", str(bundle.directory),
                                        "--image-path", str(image), cid], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            restore.stdin.write(b"go\n")
            restore.stdin.flush()
            took.append((_until(restore.stdout, b"restored_token") - began) * 1000)
            restore.wait(60)
            subprocess.run([*tool, "delete", "--force", cid], capture_output=True)
    finally:
        subprocess.run([*tool, "delete", "--force", cid], capture_output=True)
        bundle.remove()
    return took


class Qmp:
    """Plain QMP: JSON lines on a unix socket, no client library."""

    def __init__(self, path: Path) -> None:
        until = time.monotonic() + 30
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(str(path))
                break
            except OSError:
                if time.monotonic() > until:
                    raise
                time.sleep(0.002)
        self.reader = self.sock.makefile("rb")
        self.reader.readline()  # the greeting
        self.ask("qmp_capabilities")

    def ask(self, command: str, **arguments) -> dict:
        self.sock.sendall(json.dumps({"execute": command, "arguments": arguments}).encode())
        while True:
            answer = json.loads(self.reader.readline())
            if "return" in answer or "error" in answer:
                return answer

    def close(self) -> None:
        self.sock.close()


def qemu_by_hand(logs: Path, folder: Path) -> list[float]:
    argv = shlex.split((logs / "saved" / "command").read_text())
    at = argv.index("-qmp")
    state, took = folder / "state", []

    def qemu(sock: Path, *more: str, fds: tuple[int, ...] = ()) -> subprocess.Popen:
        words = [*argv[:at], "-qmp", f"unix:{sock},server=on,wait=off", *argv[at + 2:], *more]
        return subprocess.Popen(words, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, pass_fds=fds)

    booted = qemu(folder / "boot.sock")
    try:
        _until(booted.stdout, b"snapshot_ready")
        qmp = Qmp(folder / "boot.sock")
        qmp.ask("migrate-set-parameters", **{"max-bandwidth": 0})
        qmp.ask("stop")
        qmp.ask("migrate", uri=f"exec:cat > {state}")
        while qmp.ask("query-migrate")["return"].get("status") != "completed":
            time.sleep(0.01)
        qmp.ask("quit")
        qmp.close()
    finally:
        booted.kill()
        booted.wait()
    for number in range(RESTORES):
        sock = folder / f"restore{number}.sock"
        began = time.monotonic()
        fd = os.open(state, os.O_RDONLY)
        restored = qemu(sock, "-incoming", f"fd:{fd}", fds=(fd,))
        os.close(fd)
        try:
            qmp = Qmp(sock)
            while qmp.ask("query-status")["return"]["status"] != "paused":
                time.sleep(0.002)
            qmp.ask("cont")
            restored.stdin.write(b"go\n")
            restored.stdin.flush()
            took.append((_until(restored.stdout, b"restored_token") - began) * 1000)
            qmp.close()
        finally:
            restored.kill()
            restored.wait()
    return took


def main() -> None:
    kinds = sys.argv[1:] or ["runsc", "runc", "qemu-tcg"]
    for kind in kinds:
        ours, theirs = [], []
        for _ in range(ROUNDS):
            with tempfile.TemporaryDirectory(prefix="snap-by-hand-") as folder:
                values, logs = guestbench_round(kind, Path(folder))
                ours += values
                by_hand = Path(folder) / "by-hand"
                by_hand.mkdir()
                theirs += (qemu_by_hand(logs, by_hand) if kind.startswith("qemu")
                           else oci_by_hand(kind, by_hand))
        ours_ms, theirs_ms = statistics.median(ours), statistics.median(theirs)
        print(f"{kind}: guestbench restore median {ours_ms:.1f} ms ({len(ours)} restores), by "
              f"hand {theirs_ms:.1f} ms ({len(theirs)}), guestbench / by hand "
              f"{ours_ms / theirs_ms:.3f}")


if __name__ == "__main__":
    main()
