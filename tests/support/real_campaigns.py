"""A plan run for real in a test's own folder, with a scratch base of its own (other
guestbench runs on the host make scratch folders too), and its JSON report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import guestbench


def run_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: str,
             timeout_s: float = 900, may_fail: bool = False
             ) -> tuple[dict[str, Any], set[str], Path]:
    """(the JSON report, the available environments, the scratch base); skips the test when
    not even native is available. may_fail: some runs may not end ok (guestbench exits 1),
    and the test judges each run itself."""
    base = tmp_path / "scratch-base"
    base.mkdir()
    monkeypatch.setenv("GUESTBENCH_SCRATCH", str(base))
    (tmp_path / "plan.toml").write_text(plan)
    run = guestbench("run", "plan.toml", cwd=tmp_path, timeout_s=timeout_s)
    assert run.returncode in ((0, 1) if may_fail else (0,)), run.stderr
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    available = {env["name"] for env in document["environments"] if env["available"]}
    if "native" not in available:
        pytest.skip("native unavailable?")
    return document, available, base
