"""kernel_build for real, kept small: one object file of Debian's linux-source (tinyconfig),
natively and in a 2-vCPU TCG guest whose make -jN follows its vCPUs; and a missing source
is an unsupported cell that says how to get one. The whole kernel (73 s natively, 20 min
under TCG here) is measured by hand: docs/workloads-build.md has the figures."""

from __future__ import annotations

import pytest

from guestbench.workloads import kernelsrc

from .campaigns import run_plan
from .test_cli import guestbench

pytestmark = pytest.mark.integration

PLAN = """
[campaign]
name = "kernel-one-object"
repeat = 1
timeout_s = 600

[[environment]]
preset = "native"

[[environment]]
name = "tcg"
kind = "qemu"
vcpus = 2

[[workload]]
name = "kernel_build"
target = "lib/ctype.o"
jobs = "@vcpus"

[[workload]]
name = "kernel_build"
label = "no-source"
source = "/nonexistent/linux-source-9.9.tar.xz"
environments = ["native"]
"""


def test_one_object_file_natively_and_under_tcg(tmp_path, monkeypatch):
    source = kernelsrc.default_source()
    if not source:
        pytest.skip(f"no Linux source to build: {kernelsrc.missing_source_text()}")
    document, available, _ = run_plan(tmp_path, monkeypatch, PLAN, timeout_s=900)
    runs = {(run["environment"], run["label"]): run for run in document["runs"]}
    missing = runs[("native", "no-source")]
    assert missing["status"] == "unsupported"
    assert "apt-get install linux-source" in missing["reason"]
    built = []
    for environment in ("native", "tcg"):
        if environment not in available:
            print(f"\n{environment} unavailable here: skipped")
            continue
        run = runs[(environment, "kernel_build")]
        assert run["status"] == "ok", (environment, run["reason"])
        assert run["params"]["source"] == source and run["params"]["config"] == "tinyconfig"
        if environment == "tcg":  # make -jN followed the guest's vCPUs
            assert run["params"]["jobs"] == 2, run["params"]
        samples = {s["metric"]: s["value"] for s in run["samples"]}
        assert samples["elapsed"] > 0 and samples["user"] > 0
        assert {"sys", "cpu_percent", "context_switches", "sleeps"} <= set(samples)
        built.append((environment, round(samples["elapsed"], 1)))
    print(f"\nlib/ctype.o built (elapsed s): {built}")
    markdown = guestbench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert "Build (make -jN)" in markdown and "Linux kernel build" in markdown
