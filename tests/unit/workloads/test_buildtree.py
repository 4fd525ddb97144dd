"""workloads.buildtree: the build workload's generated C project is deterministic and builds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from guestbench.workloads.build import source_tree as buildtree


def test_same_units_same_bytes(tmp_path: Path) -> None:
    first = buildtree.generate(tmp_path / "a", 3)
    second = buildtree.generate(tmp_path / "b", 3)
    assert first == second
    for path in (tmp_path / "a").rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes()


def test_size_follows_units(tmp_path: Path) -> None:
    assert buildtree.generate(tmp_path / "a", 2) != buildtree.generate(tmp_path / "b", 3)
    assert sorted(p.name for p in (tmp_path / "b" / "src").iterdir()) == [
        "main.c", "unit0000.c", "unit0001.c", "unit0002.c", "units.h"]
    with pytest.raises(ValueError, match="at least 1"):
        buildtree.generate(tmp_path / "c", 0)


@pytest.mark.skipif(not (shutil.which("make") and shutil.which("cc")),
                    reason="make or cc missing (install.sh installs build-essential)")
def test_the_tree_builds_in_parallel_and_the_program_is_deterministic(tmp_path: Path) -> None:
    buildtree.generate(tmp_path, 2)
    subprocess.run(["make", "-s", "-j2"], cwd=tmp_path, check=True, timeout=120)
    outputs = {subprocess.run([str(tmp_path / "app")], capture_output=True, text=True,
                              check=True, timeout=10).stdout for _ in range(2)}
    assert len(outputs) == 1 and outputs.pop().strip().isdigit()
    subprocess.run(["make", "-s", "clean"], cwd=tmp_path, check=True, timeout=30)
    assert not list((tmp_path / "src").glob("*.o")) and not (tmp_path / "app").exists()
