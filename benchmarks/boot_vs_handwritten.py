#!/usr/bin/env python3
"""Boot to agent-ready under TCG: guestbench's qemu-tcg against hand-written QEMU command lines.

Each round boots every variant once, in turn, so drift on the host hits all of
them; the figure is the host time from starting QEMU to the agent's hello
record on the console. Usage:

    .venv/bin/python benchmarks/boot_vs_handwritten.py [ROUNDS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from guestbench import images
from guestbench.agent import host_tsc_khz

KERNEL = images.default_kernel()
IMAGE = images.build(KERNEL)
BASE = ["qemu-system-x86_64", "-accel", "tcg", "-nodefaults", "-no-user-config", "-display", "none",
        "-serial", "stdio", "-no-reboot", "-kernel", str(KERNEL), "-initrd", str(IMAGE.initramfs)]
APPEND = "console=ttyS0 quiet panic=-1 gb.args=boot"
TSC = f" tsc_early_khz={host_tsc_khz()}"

HANDWRITTEN = {
    "microvm, 512 MiB": [*BASE, "-M", "microvm", "-m", "512", "-append", APPEND],
    "microvm, 128 MiB": [*BASE, "-M", "microvm", "-m", "128", "-append", APPEND],
    # "-M microvm,x-option-roms=off,pit=off,pic=off,rtc=off" hung in 5 of 5 boots: left out
    "microvm, -cpu max": [*BASE, "-M", "microvm", "-cpu", "max", "-m", "512", "-append", APPEND],
    "microvm, tsc=reliable no_timer_check": [
        *BASE, "-M", "microvm", "-m", "512", "-append", APPEND + " tsc=reliable no_timer_check"],
    "pc (SeaBIOS)": [*BASE, "-M", "pc", "-m", "512", "-append", APPEND],
    "microvm, tsc_early_khz": [*BASE, "-M", "microvm", "-m", "512", "-append", APPEND + TSC],
    "microvm, 128 MiB, tsc_early_khz, tsc=reliable no_timer_check": [
        *BASE, "-M", "microvm", "-m", "128", "-append",
        APPEND + TSC + " tsc=reliable no_timer_check"],
}


BOOT_LIMIT_S = 30.0  # a boot that has not reached the agent by then counts as hung


def handwritten_ms(argv: list[str]) -> float | None:
    started = time.monotonic()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL)
    timer = threading.Timer(BOOT_LIMIT_S, child.kill)
    timer.start()
    try:
        for line in child.stdout:
            if b'"type":"hello"' in line:
                return (time.monotonic() - started) * 1000
        return None
    finally:
        timer.cancel()
        child.kill()
        child.wait()


def guestbench_ms(db: str) -> float | None:
    subprocess.run([sys.executable, "-m", "guestbench", "run", "--env", "qemu-tcg",
                    "--workload", "boot", "--repeat", "1", "--quiet", "--db", db],
                   check=True, capture_output=True)
    document = json.loads(subprocess.run(
        [sys.executable, "-m", "guestbench", "report", "--format", "json", "--db", db],
        check=True, capture_output=True, text=True).stdout)
    samples = document["runs"][0]["samples"]
    return next((s["value"] for s in samples if s["metric"] == "boot_agent_ready"), None)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    figures: dict[str, list[float]] = {"guestbench qemu-tcg (default)": [], **{k: [] for k in HANDWRITTEN}}
    with tempfile.TemporaryDirectory() as folder:
        for round_number in range(rounds):
            db = f"sqlite:///{folder}/boot{round_number}.sqlite"
            for name in figures:
                ms = guestbench_ms(db) if name.startswith("guestbench") else handwritten_ms(HANDWRITTEN[name])
                if ms is not None:
                    figures[name].append(ms)
    fastest = min(statistics.median(v) for k, v in figures.items() if v and not k.startswith("guestbench"))
    print(f"rounds: {rounds}; process start -> agent hello record, ms (median, all)")
    for name, values in figures.items():
        median = statistics.median(values) if values else float("nan")
        print(f"{name:42s} {median:7.0f}  x{median / fastest:4.2f} of fastest hand-written  "
              f"{[round(v) for v in values]}  ({rounds - len(values)} hung)")


if __name__ == "__main__":
    main()
