"""A VMM's sockets live in a folder whose path leaves room for them: under a long $TMPDIR
(pytest-xdist's workers give one of 80 bytes) QEMU refused its QMP socket ("UNIX socket
path ... is too long") and every run of the guest was lost as infra (2026-11-27)."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

from guestbench.environments import scratch


def test_a_long_tmpdir_gives_a_folder_under_tmp_where_a_socket_fits(tmp_path, monkeypatch):
    long = tmp_path / ("x" * 60) / ("y" * 30)
    long.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    folder = scratch.socket_folder("guestbench-qemu-")
    try:
        assert folder.parent == Path("/tmp") and len(str(folder)) <= scratch.SOCKET_FOLDER_MAX
        with socket.socket(socket.AF_UNIX) as listening:  # the longest name a VMM gives one
            listening.bind(str(folder / "virtio-serial-console.sock"))
    finally:
        for left in folder.iterdir():
            left.unlink()
        folder.rmdir()


def test_a_short_tmpdir_is_used_as_it_is(monkeypatch):
    short = Path(tempfile.mkdtemp(dir="/tmp"))  # /tmp/tmpXXXXXXXX
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    folder = scratch.socket_folder("guestbench-oci-")
    try:
        assert folder.parent == short
    finally:
        folder.rmdir()
        short.rmdir()
