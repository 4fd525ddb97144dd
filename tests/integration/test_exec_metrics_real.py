"""exec for real: sysbench's own figure as samples, natively and under runc; a regex that
does not match fails the run and says which."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.cli import guestbench

pytestmark = pytest.mark.integration

PLAN = """
[campaign]
name = "exec-real"
repeat = 1
timeout_s = 30

[[environment]]
preset = "{environment}"

[[workload]]
name = "exec"
label = "sysbench-cpu"
argv = ["sysbench", "cpu", "--cpu-max-prime=2000", "--events=5000", "--time=0", "run"]

[[workload.metrics]]
name = "events_per_s"
regex = 'events per second:\\s*(?P<value>[0-9.]+)'
unit = "events/s"
better = "higher"

[[workload.metrics]]
name = "total_time"
regex = '^\\s*total time:\\s*(?P<value>[0-9.]+)s$'
unit = "ms"
better = "lower"
scale = 1000

[[workload]]
name = "exec"
label = "no-match"
argv = ["sysbench", "cpu", "--cpu-max-prime=2000", "--events=100", "--time=0", "run"]

[[workload.metrics]]
name = "iops"
regex = 'IOPS=(?P<value>\\d+)'
unit = "IOPS"
better = "higher"
"""


@pytest.mark.parametrize("environment", ["native", "runc"])
def test_sysbench_figures_become_samples(tmp_path, available, environment):
    available(environment)
    if shutil.which("sysbench") is None:
        pytest.skip("sysbench not installed (apt-get install sysbench)")
    (tmp_path / "plan.toml").write_text(PLAN.format(environment=environment))
    run = guestbench("run", "plan.toml", cwd=tmp_path, timeout_s=120)
    assert run.returncode == 1, run.stderr  # no-match's run fails, as it should
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    runs = {entry["label"]: entry for entry in document["runs"]}

    ok = runs["sysbench-cpu"]
    assert ok["status"] == "ok", ok["reason"]
    samples = {sample["metric"]: (sample["unit"], sample["value"]) for sample in ok["samples"]}
    assert samples["events_per_s"][0] == "events/s" and samples["events_per_s"][1] > 0
    assert samples["total_time"][0] == "ms" and samples["total_time"][1] > 0
    assert {"elapsed", "max_rss"}.isdisjoint(samples), "only the declared metrics"

    failed = runs["no-match"]
    assert failed["status"] == "failed"
    assert "metric iops: regex 'IOPS=(?P<value>\\d+)' was expected to match once in stdout, " \
           "found no match" in failed["reason"], failed["reason"]
    assert not failed["samples"]
