"""guestbench installed as Python tools are: a wheel built from the repository, installed into
a fresh virtual environment outside it, runs a campaign and `guestbench doctor` from a
folder of its own, with the agent and its gate that the wheel carries."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the installed environment's guestbench program)."""
    folder = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                            str(folder / "dist"), str(ROOT)], capture_output=True, text=True)
    if built.returncode != 0 and "Could not find a version that satisfies" in built.stderr:
        pytest.skip(f"the wheel's build tools could not be fetched: {built.stderr[-300:]}")
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (folder / "dist").glob("guestbench-*.whl")
    venv = folder / "venv"
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    setup = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)],
                           capture_output=True, text=True)
    assert setup.returncode == 0, setup.stderr[-2000:]
    return wheel, venv / "bin" / "guestbench"


def _outside(tmp_path: Path) -> dict[str, str]:
    """An environment with nothing of the checkout's: no agent path, no source on sys.path."""
    environ = {key: value for key, value in os.environ.items()
               if key not in ("GUESTBENCH_AGENT", "PYTHONPATH", "VIRTUAL_ENV")}
    environ["GUESTBENCH_CACHE"] = str(tmp_path / "cache")
    return environ


def test_the_wheel_carries_its_programs_and_names_its_platform(installed) -> None:
    wheel, _ = installed
    assert wheel.name.endswith("-py3-none-linux_x86_64.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = {info.filename: info for info in archive.infolist()}
        tag = archive.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    for program in ("gbagent", "gbgate"):
        (entry,) = [n for n in names if n.endswith(f"guestbench/_bin/{program}")]
        assert names[entry].external_attr >> 16 & 0o111, f"{program} is not executable"
    assert any(n.endswith("guestbench/packages.toml") for n in names)
    assert any(n.endswith("guestbench/examples/quick.toml") for n in names)
    assert "Tag: py3-none-linux_x86_64" in tag and "Root-Is-Purelib: false" in tag


def test_an_installed_wheel_runs_a_campaign_from_a_folder_of_its_own(installed,
                                                                     tmp_path) -> None:
    _, guestbench = installed
    ran = subprocess.run([str(guestbench), "run", "--env", "native,namespace", "--workload",
                          "getpid", "--repeat", "2"], cwd=tmp_path, env=_outside(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "getpid (ns)" in ran.stdout
    assert (tmp_path / "guestbench.sqlite").exists() and (tmp_path / "guestbench-logs").is_dir()
    found = subprocess.run(
        [str(guestbench.parent / "python"), "-c", "from guestbench import agent\n"
         "from guestbench.process import gate\nprint(agent.path(), gate.built()[0][0])"],
        cwd=tmp_path, env=_outside(tmp_path), capture_output=True, text=True, check=True)
    packaged = next(guestbench.parent.parent.glob("lib/python3*/site-packages/guestbench/_bin"))
    assert found.stdout.split() == [str(packaged / "gbagent"), str(packaged / "gbgate")]


def test_an_installed_wheel_s_doctor_lists_every_kind(installed, tmp_path) -> None:
    _, guestbench = installed
    said = subprocess.run([str(guestbench), "doctor"], cwd=tmp_path, env=_outside(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert said.returncode == 0, said.stderr[-2000:]
    for kind in ("native", "namespace", "oci", "qemu", "uml", "firecracker"):
        assert f"| {kind} " in said.stdout
    assert max(len(line) for line in said.stdout.splitlines()) <= 120


def test_a_missing_plan_points_at_the_installed_examples(installed, tmp_path) -> None:
    _, guestbench = installed
    said = subprocess.run([str(guestbench), "run", "no-such-plan.toml"], cwd=tmp_path,
                          env=_outside(tmp_path), capture_output=True, text=True, timeout=60)
    assert said.returncode == 2, said.stderr
    example = next(guestbench.parent.parent.glob(
        "lib/python3*/site-packages/guestbench/examples/quick.toml"))
    assert f"{example} is a starting point" in " ".join(said.stderr.split())
    ran = subprocess.run([str(guestbench), "run", str(example), "--env", "native",
                          "--workload", "getpid", "--repeat", "1"], cwd=tmp_path,
                         env=_outside(tmp_path), capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
