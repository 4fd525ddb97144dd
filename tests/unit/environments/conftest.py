"""Fixtures of the environments' unit tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

FAKE_VMM = Path(__file__).resolve().parents[2] / "support" / "fake_vmm.py"


def fake_binary(folder: Path) -> Path:
    """An executable that is the stand-in VMM (tests/support/fake_vmm.py)."""
    program = folder / "fake-vmm"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_VMM} \"$@\"\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A stand-in for Firecracker or Cloud Hypervisor that serves their API: (the
    environment's options naming it, a reader of the requests it got, a setter of its
    replies by "METHOD PATH")."""
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("FAKE_VMM_LOG", str(log))

    def requests() -> list[dict]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def replies(table: dict) -> None:
        monkeypatch.setenv("FAKE_VMM_REPLIES", json.dumps(table))
    return {"binary": str(fake_binary(tmp_path))}, requests, replies
