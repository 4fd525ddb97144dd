"""history on real campaigns: a program made three times as slow from the 6th of 10 native
campaigns (its loop three times as long, as a code change would); Otava's change point is
at the 6th.

The program times its loop five times and gives the best, and the slowdown is 3x: with a
30% slowdown and one timing per run, campaigns' medians on a busy 2-core host spread as
much as the change (16.8 to 20.7 ms before it), and Otava found no change point in 2 of 5
tries here; with 2x, a busy spell that made one campaign before the change 35-40% slower
(14.3-15.5 ms, then 19.9) hid the change in 2 of 6 tries on 2026-11-25. The loop three
times as long is not always three times as slow: 2.7 to 3.0x here, 2.3x on a fresh CI
machine on 2026-11-28 (the medians 15.5-16.4 ms, then 36.9), 4.4x on a fresh clone here on
2026-11-29 (18.1-19.7 ms, then 85.3): the test asks for a change of 1.8x to 6x.
The loop is timed in the process's CPU time: in wall time, the suite's other workers made
campaigns before the change 29-31 ms, one 17.3 ms (a quiet spell), and Otava found no
change point at all (a fresh clone here, 2026-11-30); CPU time does not count the waits
for a CPU that a busy host adds.
The host's own shifts between campaigns may be change points too (a real one, not the
program's): the test asks that the program's is found at the 6th, at least 1.8x, and that
no other is half its size."""

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
argv = ["{python}", "-c", "import time, timeit; print('ms:', min(timeit.repeat('sum(range({n}))', number=1, repeat=5, timer=time.process_time)) * 1e3)"]

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
                                    n=3_000_000 if number >= 6 else 1_000_000))
        done = subprocess.run([*GUESTBENCH, "run", str(plan), "--quiet"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    shown = subprocess.run([*GUESTBENCH, "history", "--format", "json"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    [series] = json.loads(shown.stdout)["series"]
    medians = [round(point["median"], 2) for point in series["points"]]
    found = {change["index"]: change for change in series["change_points"]}
    assert 5 in found, (series["change_points"], medians)
    assert found[5]["worse"] and 0.8 < found[5]["change"] < 5, medians
    # the host itself may shift between campaigns (seen here: the first campaign 13.2 ms,
    # the next four 15.0-15.3 ms, a change point of its own); never by as much as the code
    assert all(abs(change["change"]) < found[5]["change"] / 2
               for index, change in found.items() if index != 5), \
        (series["change_points"], medians)
