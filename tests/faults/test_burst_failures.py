"""A burst whose instances are made to fail: any VMM from a command line (kind = "command",
UML here) whose launcher runs a binary that does not exist once in every five launches. The
burst says 80% of its instances became ready, keeps each failure's reason in its run and
its burst.json, and leaves no instance behind."""

from __future__ import annotations

import json
import shutil
import stat

import pytest

from tests.support.cli import guestbench, ok_runs
from tests.support.leaks import guest_folders, guest_processes, left_since
from tests.support.real_environments import uml_kernel

LAUNCHER = """#!/bin/sh
# every fifth launch of this VMM is a bad binary; the count is shared by concurrent launches
exec 9>>{count}.lock
flock 9
n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 ))
echo $n > {count}
flock -u 9
if [ $((n % 5)) -eq 0 ]; then exec /nonexistent/linux.uml "$@"; fi
exec linux.uml "$@"
"""


def test_one_bad_binary_in_five_gives_80_percent_ready_and_every_reason(tmp_path):
    uml = uml_kernel()
    if shutil.which("flock") is None:
        pytest.skip("flock not installed (apt-get install util-linux)")
    launcher = tmp_path / "vmm.sh"
    launcher.write_text(LAUNCHER.format(count=tmp_path / "launches"))
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
    runs = ok_runs(tmp_path, 2, str(plan))
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
    kept = [json.loads(path.read_text()) for path in tmp_path.glob("**/burst.json")]
    failures = [i["failure"] for burst in kept for i in burst["instances"] if i["failure"]]
    assert len(kept) == 2 and len(failures) == 4
    assert all("it ended before its agent's hello" in failure
               and "/nonexistent/linux.uml: not found" in failure for failure in failures)
    shown = guestbench("report", "--table", "burst", "--format", "markdown", cwd=tmp_path)
    assert "| ready | uml-cmd | 80% (16/20) |" in shown.stdout, shown.stdout
    assert not left_since(processes, folders, wait_s=5.0)
