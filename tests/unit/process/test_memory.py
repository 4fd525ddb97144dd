"""A process tree's memory from /proc: PSS, USS, RSS, and the guest's RAM told apart."""

from __future__ import annotations

import os
import subprocess
import sys

from guestbench.process import memory


def test_the_tree_holds_a_child_and_its_child():
    child = subprocess.Popen([sys.executable, "-c",
                              "import subprocess, sys; subprocess.run(['sleep', '5'])"])
    try:
        for _ in range(200):  # until the grandchild is there
            found = memory.tree(os.getpid())
            if len(found) >= 3:
                break
            subprocess.run(["sleep", "0.01"])
        assert os.getpid() == found[0] and child.pid in found and len(found) >= 3
    finally:
        child.kill()
        child.wait()


def test_a_process_costs_what_its_mappings_hold():
    # a child with 64 MiB written (private, resident), ready when it says so
    child = subprocess.Popen([sys.executable, "-c", "b = bytearray(64 << 20); "
                              "b[::4096] = b'x' * len(b[::4096]); print('ready', flush=True); "
                              "import time; time.sleep(30)"], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"ready\n"
        used = memory.usage(child.pid)
    finally:
        child.kill()
        child.wait()
    assert used.processes == 1 and used.guest_pss_kib is None
    assert used.uss_kib <= used.pss_kib <= used.rss_kib
    assert used.uss_kib >= 64 << 10
    metrics = {metric: (unit, value) for metric, unit, value in used.samples()}
    assert metrics["footprint_pss"] == ("MiB", used.pss_kib / 1024)
    assert metrics["footprint_processes"] == ("count", 1.0)
    assert "footprint_overhead" not in metrics


def test_the_overhead_leaves_out_the_guest_s_ram():
    ballast = bytearray(48 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])
    # the interpreter's own mappings: every one but a ~48 MiB anonymous one counts as overhead
    used = memory.usage(os.getpid(), lambda size_kib, header: size_kib >= 48 << 10
                        and header.split()[-1] != ")" and len(header.split()) == 5)
    assert used.guest_pss_kib is not None and used.guest_pss_kib >= 40 << 10
    metrics = {metric: value for metric, _, value in used.samples()}
    assert metrics["footprint_overhead"] * 1024 == used.pss_kib - used.guest_pss_kib
    del ballast


def test_which_mappings_are_guest_ram():
    qemu = memory.sized(512)
    assert qemu(512 * 1024, "7f7dd3e00000-7f7df3e00000 rw-p 00000000 00:00 0")
    assert not qemu(1048572, "7f7dfc000000-7f7e3bfff000 rwxp 00000000 00:00 0")
    uml = "89000000-a7e31000 rwxs 29000000 00:1b 9398     /dev/shm/#9398 (deleted)"
    assert memory.shared_deleted_file(506052, uml)
    assert not memory.shared_deleted_file(506052, uml.replace("rwxs", "rwxp"))
    assert not memory.shared_deleted_file(89240, "7f7dce600000-7f7dd3d26000 r--p 00000000 "
                                                 "fe:00 10051917   /root/initramfs.cpio")


def test_a_process_gone_costs_nothing():
    child = subprocess.Popen(["true"])
    child.wait()
    assert memory.usage(child.pid) == memory.Usage(0, 0, 0, 0, None)
