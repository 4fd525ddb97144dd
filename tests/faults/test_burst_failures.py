"""A burst whose instances are made to fail: any VMM from a command line (kind = "command",
UML here) whose launcher runs a binary that does not exist once in every five launches. The
burst says 80% of its instances became ready, keeps each failure's reason in its run and
its burst.json, and leaves no instance behind."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from tests.support.cli import guestbench, ok_runs
from tests.support.leaks import guest_folders, guest_processes, left_since
from tests.support.real_environments import uml_kernel

LAUNCHER = """#!/bin/sh
# every Nth launch of this VMM is a bad binary (N in the file {every}; 0: none); the count is
# shared by concurrent launches
exec 9>>{count}.lock
flock 9
n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 ))
echo $n > {count}
flock -u 9
every=$(cat {every})
if [ "$every" -gt 0 ] && [ $((n % every)) -eq 0 ]; then exec /nonexistent/linux.uml "$@"; fi
exec linux.uml "$@"
"""


def test_one_bad_binary_in_five_gives_80_percent_ready_and_every_reason(tmp_path):
    """The same burst with every launch good (A), then with one bad in five (B): B's rate is
    80%, each failure has its reason, and compare's gate fails on the rate, though every run
    of B ended ok and its ready instances' times are A's."""
    uml = uml_kernel()
    if shutil.which("flock") is None:
        pytest.skip("flock not installed (apt-get install util-linux)")
    launcher, every = tmp_path / "vmm.sh", tmp_path / "every"
    launcher.write_text(LAUNCHER.format(count=tmp_path / "launches", every=every))
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    argv = ", ".join(json.dumps(word) for word in [
        str(launcher), "mem={memory_mib}M", "initrd={initrd}", "uml_dir={workdir}", "umid=gb",
        "con=null", "con0=fd:0,fd:1", "{cmdline}"])
    plan = tmp_path / "burst.toml"
    plan.write_text(f'[campaign]\nrepeat = 2\ntimeout_s = 300\n\n[[environment]]\n'
                    f'name = "uml-cmd"\nkind = "command"\nkernel = "{uml}"\n'
                    f'kernel_args = ["console=tty0"]\nport_io = false\nargv = [{argv}]\n\n'
                    '[[workload]]\nname = "burst"\ninstances = 10\n')
    processes, folders = guest_processes(), guest_folders()
    every.write_text("0")
    good = guestbench("run", str(plan), "--name", "good", "--quiet", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    (tmp_path / "launches").unlink()
    every.write_text("5")
    runs = ok_runs(tmp_path, 2, str(plan), "--name", "bad")
    rates = [sample["value"] for entry in runs for sample in entry["samples"]
             if sample["metric"] == "burst_success"]
    assert sum(rates) / len(rates) == pytest.approx(80, abs=5), rates
    assert len((tmp_path / "launches").read_text().split()) == 1  # the launcher's own count
    assert int((tmp_path / "launches").read_text()) == 20
    for entry in runs:  # the run names its failures, each with the log's words
        assert entry["reason"].startswith("2 of 10 instances failed: instance "), entry["reason"]
        assert entry["reason"].count("/nonexistent/linux.uml: not found") == 2
        ready = [s for s in entry["samples"] if s["metric"] == "burst_ready"]
        assert len(ready) == 8 and all(s["value"] > 0 for s in ready)
    kept = [json.loads((Path(entry["log_path"]) / "burst.json").read_text()) for entry in runs]
    failures = [i["failure"] for burst in kept for i in burst["instances"] if i["failure"]]
    assert len(kept) == 2 and len(failures) == 4
    assert all("it ended before its agent's hello" in failure
               and "/nonexistent/linux.uml: not found" in failure for failure in failures)
    shown = guestbench("report", "--table", "burst", "--format", "markdown", cwd=tmp_path)
    assert "| ready | uml-cmd | 80% (16/20) |" in shown.stdout, shown.stdout
    gate = guestbench("compare", "good", "bad", "--fail-on-regression", "--format", "json",
                      cwd=tmp_path)
    assert gate.returncode == 1, gate.stderr
    [flaky] = json.loads(gate.stdout)["broken"]
    assert (flaky["environment"], flaky["outcome"]) == ("uml-cmd", "flaky"), flaky
    assert flaky["reason"].startswith("16 of 20 instances succeeded in B (burst_success), "
                                      "20 of 20 in A; success 80% against 100%"), flaky
    assert not left_since(processes, folders, wait_s=5.0)
