"""history on real campaigns: a program made 30% slower from the 6th of 10 native campaigns
(its loop 30% longer, as a code change would); Otava's change point is at the 6th."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration
GUESTBENCH = [sys.executable, "-m", "guestbench"]
PLAN = """\
[campaign]
name = "loop"
repeat = 5
timeout_s = 60

[[environment]]
preset = "native"

[[workload]]
name = "exec"
label = "sum"
argv = ["{python}", "-c", "import time; t = time.perf_counter(); sum(range({n})); print('ms:', (time.perf_counter() - t) * 1e3)"]

[[workload.metrics]]
name = "elapsed"
regex = '^ms: (?P<value>[0-9.]+)'
unit = "ms"
better = "lower"
"""


def test_a_real_slowdown_from_the_sixth_campaign_is_found_there(tmp_path, available):
    available("native")
    for number in range(1, 11):
        plan = tmp_path / "loop.toml"
        plan.write_text(PLAN.format(python=sys.executable,
                                    n=1_300_000 if number >= 6 else 1_000_000))
        done = subprocess.run([*GUESTBENCH, "run", str(plan), "--quiet"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    shown = subprocess.run([*GUESTBENCH, "history", "--format", "json"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    [series] = json.loads(shown.stdout)["series"]
    medians = [round(point["median"], 2) for point in series["points"]]
    assert len(series["change_points"]) == 1, (series["change_points"], medians)
    [change] = series["change_points"]
    assert change["index"] == 5 and change["worse"], medians
    assert 0.15 < change["change"] < 0.45, medians
